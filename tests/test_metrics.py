"""Metrics (issue 26): ``GET /metrics``, its access rule, the real tools on it and on deploy/.

* In the app (the aiohttp test client): who may read ``/metrics`` (loopback, a trusted
  proxy's own request, a ``METRICS_TOKEN`` bearer; never a forwarded request), and that a
  move made by POST and one made on a socket are counted by game, path and outcome.
* A running ``python -m webapp --local`` (on the shared Redis under a prefix of its own): a
  played move raises ``karty_moves_total``, and the scrape passes ``promtool check metrics``
  (skipped only where promtool is not installed: Debian's ``prometheus`` package,
  scripts/system-deps.sh); where the Prometheus server is installed, one is started on a free
  loopback port against the service and its query API returns the counter.
* deploy/prometheus: ``promtool check config``, ``check rules`` and ``test rules`` (the alert
  rules' unit tests); deploy/grafana's dashboard: JSON whose every query parses (each turned
  into a recording rule checked by promtool) and names only metrics the service exports.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time

import aiohttp
import pytest
from conftest import unique_prefix
from ops_support import (
    PROMETHEUS,
    PROMTOOL,
    ROOT,
    LocalService,
    delete_prefix,
    environ_redis,
    free_port,
    local_player,
    local_table,
    play_one_move,
    sample_value,
)

from webapp.metrics import allowed

DEPLOY = ROOT / "deploy"
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian: prometheus)")
needs_prometheus = pytest.mark.skipif(PROMETHEUS is None, reason="the Prometheus server is not installed")


# ------------------------------------------------------------------------ in the app
async def local_client(aiohttp_client, **extra):
    from webapp.__main__ import build
    from webapp.settings import WebSettings

    settings = WebSettings(redis_url=f"redis://127.0.0.1:{free_port()}/0", local_play=True, bot_token=None,
                           run_worker=True, **extra)
    return await aiohttp_client(await build(settings))


async def test_metrics_answer_loopback_and_a_token_and_refuse_forwarded_requests(aiohttp_client):
    client = await local_client(aiohttp_client, METRICS_TOKEN="s3cret-token", TRUSTED_PROXIES="10.0.0.7")
    r = await client.get("/metrics")  # the test client is on loopback
    assert r.status == 200
    assert r.headers["Content-Type"].startswith("text/plain")
    text = await r.text()
    assert "process_cpu_seconds_total" in text and "python_gc_objects_collected_total" in text
    # what a proxy forwards (from the internet) is refused, even from loopback …
    r = await client.get("/metrics", headers={"X-Forwarded-For": "203.0.113.9"})
    assert r.status == 403 and (await r.json())["error"] == "forbidden"
    r = await client.get("/metrics", headers={"Forwarded": "for=203.0.113.9"})
    assert r.status == 403
    # … unless it carries the token
    r = await client.get("/metrics", headers={"X-Forwarded-For": "203.0.113.9",
                                              "Authorization": "Bearer s3cret-token"})
    assert r.status == 200
    r = await client.get("/metrics", headers={"X-Forwarded-For": "203.0.113.9",
                                              "Authorization": "Bearer wrong"})
    assert r.status == 403

    # the rule itself for other peers: a trusted proxy's own request, a stranger's, with a token
    from aiohttp.test_utils import make_mocked_request

    def asked(peer: str, **headers: str) -> bool:
        request = make_mocked_request("GET", "/metrics", headers=headers, app=client.server.app)
        return allowed(request.clone(remote=peer))

    assert asked("127.0.0.1") and asked("::1")
    assert asked("10.0.0.7")  # Prometheus on the proxy's machine
    assert not asked("203.0.113.9")
    assert asked("203.0.113.9", Authorization="Bearer s3cret-token")
    assert not asked("10.0.0.7", **{"X-Forwarded-For": "203.0.113.9"})


async def test_moves_by_post_and_by_socket_are_counted_by_game_path_and_outcome(aiohttp_client):
    client = await local_client(aiohttp_client)

    async def scrape() -> str:
        return await (await client.get("/metrics")).text()

    before = await scrape()
    login = await (await client.post("/api/local/login", json={"name": "Tester"})).json()
    headers = {"Authorization": f"tma {login['init_data']}"}
    made = await (await client.post("/api/local/tables", json={"game": "penki", "players": 2},
                                    headers=headers)).json()
    table_id = made["table"]["id"]
    ws = await client.ws_connect(f"/ws/tables/{table_id}")
    await ws.send_str(json.dumps({"type": "auth", "init_data": login["init_data"]}))
    posted = sent = refused = computer = False
    deadline = time.monotonic() + 60
    while not (posted and sent and refused and computer):
        assert time.monotonic() < deadline, (posted, sent, refused, computer)
        msg = json.loads((await ws.receive(timeout=20)).data)
        if msg["type"] != "state":
            continue
        computer = computer or msg["by"] == "computer"
        view = msg["view"]
        if view["over"]:
            break
        if view["to_move"] != made["seat"] or not view["legal"]:
            continue
        if not refused:  # a stale version: refused 409 on the socket
            await ws.send_str(json.dumps({"type": "act", "ref": "r0", "action": view["legal"][0],
                                          "version": msg["version"] + 5}))
            refused = True
        if not posted:
            r = await client.post(f"/api/tables/{table_id}/actions", headers=headers,
                                  json={"action": view["legal"][0], "version": msg["version"]})
            posted = r.status == 200
        elif not sent:
            await ws.send_str(json.dumps({"type": "act", "ref": "r1", "action": view["legal"][0],
                                          "version": msg["version"]}))
            while True:
                answer = json.loads((await ws.receive(timeout=20)).data)
                if answer.get("ref") == "r1":
                    sent = answer["type"] == "acted"
                    break
    await ws.close()
    after = await scrape()

    def grew(name: str, **labels: str) -> float:
        return sample_value(after, name, **labels) - sample_value(before, name, **labels)

    assert grew("karty_moves_total", game="penki", path="post", outcome="committed") == 1
    assert grew("karty_moves_total", game="penki", path="socket", outcome="committed") == 1
    assert grew("karty_moves_total", game="penki", path="socket", outcome="stale") == 1
    assert grew("karty_move_seconds_count", path="post") == 1
    assert grew("karty_move_seconds_count", path="socket") == 1
    assert grew("karty_fanout_seconds_count") >= 1  # the socket was sent its commits
    assert grew("karty_redis_call_seconds_count", script="move") >= 2
    assert grew("karty_computer_decisions_total") >= 1  # the computer seat moved (the worker)
    assert grew("karty_timer_moves_total", by="computer") >= 1
    assert sample_value(after, "karty_event_loop_lag_seconds_count") >= 0
    # bounded labels: no table or user id anywhere in the exposition
    assert table_id not in after and str(login.get("user", {}).get("id", "no-such-id")) not in after


# ------------------------------------------------------------------------ a running service
@pytest.fixture
async def service(tmp_path):
    """``python -m webapp --local`` on the shared Redis under a prefix of its own; removed after."""
    prefix = unique_prefix()
    url = environ_redis()
    svc = LocalService(free_port(), tmp_path / "service.log",
                       {"REDIS_URL": url, "KARTY_PREFIX": prefix, "METRICS_SAMPLE": "0.5"})
    svc.start()
    try:
        async with aiohttp.ClientSession() as http:
            await svc.ready(http)
        yield svc
    finally:
        svc.stop()
        await delete_prefix(url, prefix)


async def played_move(svc: LocalService, http: aiohttp.ClientSession) -> None:
    headers = await local_player(http, svc.base)
    made = await local_table(http, svc.base, headers)
    await play_one_move(http, svc.base, headers, made["table"]["id"])


@pytest.mark.redis
@needs_promtool
async def test_a_running_services_scrape_passes_promtool_check_metrics(service):
    async with aiohttp.ClientSession() as http:
        await played_move(service, http)
        async with http.get(f"{service.base}/metrics") as r:
            assert r.status == 200
            text = await r.text()
    assert sample_value(text, "karty_moves_total", game="prsi", path="post", outcome="committed") == 1
    # the sampler has read the outbox and the deadlines (a local table has a turn timer)
    deadline = time.monotonic() + 60
    while 'karty_outbox_pending{shard="0"}' not in text:
        assert time.monotonic() < deadline, "no outbox sample"
        await asyncio.sleep(0.2)
        async with aiohttp.ClientSession() as http, http.get(f"{service.base}/metrics") as r:
            text = await r.text()
    check = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.strip() == "" and check.stderr.strip() == "", check.stdout + check.stderr  # not even a lint


@pytest.mark.redis
@needs_prometheus
async def test_prometheus_scrapes_the_service_and_sees_a_played_move(service, tmp_path):
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(f"""global:
  scrape_interval: 1s
scrape_configs:
  - job_name: karty
    scrape_interval: 1s
    static_configs:
      - targets: ["127.0.0.1:{service.port}"]
""", encoding="utf-8")
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{port}",
                             f"--storage.tsdb.path={tmp_path / 'data'}"],
                            stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("wb"),
                            start_new_session=True)
    try:
        async with aiohttp.ClientSession() as http:
            await played_move(service, http)
            query = 'sum(karty_moves_total{job="karty",game="prsi",path="post",outcome="committed"})'
            deadline = time.monotonic() + 120  # a hang guard: Prometheus scrapes every second
            value = None
            while time.monotonic() < deadline:
                assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
                try:
                    async with http.get(f"http://127.0.0.1:{port}/api/v1/query", params={"query": query}) as r:
                        got = await r.json()
                    result = got["data"]["result"]
                    if result:
                        value = float(result[0]["value"][1])
                        if value >= 1:
                            break
                except (aiohttp.ClientError, OSError, KeyError, ValueError):
                    pass
                await asyncio.sleep(0.25)
            assert value == 1, value
            async with http.get(f"http://127.0.0.1:{port}/api/v1/query", params={"query": 'up{job="karty"}'}) as r:
                assert (await r.json())["data"]["result"][0]["value"][1] == "1"
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# ------------------------------------------------------------------------ deploy/
@needs_promtool
def test_the_shipped_prometheus_config_and_alert_rules_pass_promtool(tmp_path):
    config = subprocess.run([PROMTOOL, "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml")],
                            capture_output=True, text=True)
    assert config.returncode == 0, config.stdout + config.stderr
    rules = subprocess.run([PROMTOOL, "check", "rules", str(DEPLOY / "prometheus" / "karty-alerts.yml")],
                           capture_output=True, text=True)
    assert rules.returncode == 0, rules.stdout + rules.stderr
    assert "6 rules found" in rules.stdout
    tests = subprocess.run([PROMTOOL, "test", "rules", "karty-alerts.test.yml"], cwd=DEPLOY / "prometheus",
                           capture_output=True, text=True)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    text = (DEPLOY / "prometheus" / "karty-alerts.test.yml").read_text(encoding="utf-8")
    for alert in ("KartyProcessDown", "KartyOutboxLag", "KartyMoveLatencyHigh", "KartyTelegram429s",
                  "KartyRedisErrors", "KartyEventLoopLag"):
        assert f"alertname: {alert}" in text, alert


METRIC = re.compile(r"\b(karty_[a-z_]+?)(?:_bucket|_count|_sum)?\b")


async def test_the_dashboard_queries_parse_and_name_only_exported_metrics(aiohttp_client, tmp_path):
    dashboard = json.loads((DEPLOY / "grafana" / "karty-dashboard.json").read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    titles = " ".join(p["title"] for p in dashboard["panels"]).lower()
    for wanted in ("moves per second", "p50, p99", "sockets", "outbox", "telegram", "errors"):
        assert wanted in titles, wanted
    client = await local_client(aiohttp_client)
    exported = await (await client.get("/metrics")).text()
    from prometheus_client import REGISTRY

    names = {m.name for m in REGISTRY.collect()} | {f"{m.name}_total" for m in REGISTRY.collect()}
    for expr in exprs:
        for name in METRIC.findall(expr):
            assert name in names or name in exported, (name, expr)
    if PROMTOOL is None:
        pytest.skip("promtool is not installed: the queries' syntax is not checked")
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query{i}", "expr": e.replace("$__rate_interval", "5m")} for i, e in enumerate(exprs)]}]}
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(json.dumps(rules), encoding="utf-8")  # JSON is YAML
    check = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_system_deps_installs_promtool() -> None:
    text = (ROOT / "scripts" / "system-deps.sh").read_text(encoding="utf-8")
    assert "promtool" in text and "prometheus" in text

