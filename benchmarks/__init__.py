"""Karty's benchmarks: ``make bench`` (``python -m benchmarks``).

Speed and memory targets live here, never in timed tests. Sections:

* ``engine``  — random legal playouts, actions/s: Prší (3 players) beside RLCard's
  pure-Python UNO (3 players); the target is Prší ≥ 2× UNO. Penki likewise.
* ``play_out`` — whole games between the engine's computer players
  (``engine.__main__.play_out``), matches/s and actions/s, both games.
* ``store``   — ``store.apply`` round trips on the real Redis, p50/p99 ms.
* ``memory``  — bytes of a dumped state's JSON, peak tracemalloc of 1,000 live states.

Results go to a table on stdout and to ``test-output/bench.json``.
"""
