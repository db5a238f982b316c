"""``make audit``: Lighthouse (mobile) and axe-core on the Mini App as a phone meets it (issue 25).

Starts ``python -m webapp --local`` on a free loopback port (its store an embedded fakeredis
of its own: nothing is written to a shared Redis), signs in locally and makes a Prší table
with two computers, then:

* **Lighthouse** (scripts/audit/node_modules, pinned in package-lock.json) with its mobile
  defaults (a Moto G Power screen, simulated slow 4G: 150 ms RTT, 1.6 Mbit/s, 4x CPU
  slowdown) on the home page (the local sign-in) and the live table, opened as Telegram opens
  it (``?table=<id>#tgWebAppData=<initData>``; ``notg`` keeps out telegram-web-app.js, which a
  machine without internet cannot fetch). Each page ``--runs`` times in Debian's chromium;
  the median run by performance score is reported.
  With nginx installed, both pages are measured a second time through deploy/nginx.conf itself
  (TLS with a throwaway self-signed certificate, HTTP/2), as phones reach a deployed Karty:
  aiohttp speaks HTTP/1.1 only, where Chromium (and Lighthouse's simulation) fetch at most six
  files at a time per origin; through nginx's HTTP/2 the page's modules come at once.
* **axe-core** on the main screens (tests/axe_support.py) in cs, ru and en.

``--calibrate`` (``make audit`` sets it): Lighthouse's 4x CPU slowdown stands for a low-tier
phone on a fast desktop; on a slower or busy machine (Lighthouse's own benchmark index below
~1000; it warns "slower CPU than Lighthouse expects") it emulates a phone many times slower.
Each run's trace is then audited a second time (``-A``, no second load) with the slowdown its
own benchmark index calls for: the index over a low-tier phone's (264, DevTools' calibration),
between 1 and 4. Both figures are reported; the targets are judged on the calibrated ones.

Targets (exit status 1 when one is missed): performance >= 0.95, first contentful paint <=
1.5 s, largest contentful paint <= 2.0 s, accessibility >= 0.98 on both pages; axe: no
serious or critical violation. Figures in test-output/audit/summary.json (and each run's
Lighthouse report beside it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from axe_support import LOCALES, axe_version, blocking, describe, main_screens, run_axe  # noqa: E402

AUDIT = ROOT / "scripts" / "audit"
LIGHTHOUSE = AUDIT / "node_modules" / ".bin" / "lighthouse"
CHROMIUM = os.environ.get("CHROME_PATH", "/usr/bin/chromium")
CHROME_FLAGS = ("--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                "--disable-background-networking --disable-component-update --disable-sync")
TARGETS = {"performance": 0.95, "accessibility": 0.98, "fcp_ms": 1500, "lcp_ms": 2000}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict, init_data: str | None = None) -> dict:
    headers = {"Content-Type": "application/json"}
    if init_data:
        headers["Authorization"] = f"tma {init_data}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


class Server:
    """``python -m webapp --local`` on a free port; stopped by its pid."""

    def __init__(self, log_path: Path, app: Path = ROOT) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        env = {k: v for k, v in os.environ.items() if k != "BOT_TOKEN"}
        # a port nothing listens on: the app starts an embedded fakeredis of its own
        env.update(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0", LOCAL_PLAY="1")
        self.log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "webapp", "--local", "--host", "127.0.0.1",
                                      "--port", str(self.port), "--log-level", "WARNING"],
                                     cwd=app, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the webapp exited with {self.proc.returncode}; see {log_path}")
            try:
                with urllib.request.urlopen(self.url + "api/config", timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise SystemExit(f"the webapp did not answer on {self.url}; see {log_path}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


class Nginx:
    """deploy/nginx.conf in an nginx of its own (a temporary prefix), every upstream pointed at
    ``backend_port``, TLS with a self-signed certificate made now, on a free loopback port."""

    def __init__(self, tmp: Path, backend_port: int, conf: Path = ROOT / "deploy" / "nginx.conf") -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}/"
        cert, key = tmp / "cert.pem", tmp / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
        text = conf.read_text(encoding="utf-8")
        text = re.sub(r"127\.0\.0\.1:808\d", f"127.0.0.1:{backend_port}", text)
        text = re.sub(r"listen 443 ssl http2;.*", f"listen 127.0.0.1:{self.port} ssl http2;", text)
        text = re.sub(r"listen \[::\]:\d+.*", "", text)
        text = re.sub(r"listen 80;", f"listen 127.0.0.1:{free_port()};", text)
        text = re.sub(r"ssl_certificate\s.*", f"ssl_certificate {cert};", text)
        text = re.sub(r"ssl_certificate_key\s.*", f"ssl_certificate_key {key};", text)
        (tmp / "karty.conf").write_text(text, encoding="utf-8")
        main = tmp / "nginx.conf"
        main.write_text(f"""daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{}}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  include {tmp}/karty.conf;
}}
""", encoding="utf-8")
        self.proc = subprocess.Popen([NGINX, "-p", str(tmp), "-c", str(main)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        self.stop()
        raise SystemExit(f"nginx did not listen; see {tmp / 'error.log'}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def lighthouse_version() -> str:
    pkg = AUDIT / "node_modules" / "lighthouse" / "package.json"
    return json.loads(pkg.read_text(encoding="utf-8"))["version"]


def stop_browsers_under(folder: Path) -> None:
    """SIGTERM each process whose command line names ``folder`` (the Chrome a run started)."""
    mine = str(folder)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if mine in (proc / "cmdline").read_bytes().decode("utf-8", "replace"):
                os.kill(int(proc.name), signal.SIGTERM)
        except (OSError, ValueError):
            continue


# DevTools' CPU calibration (front_end/panels/mobile_throttling/CalibrationController.ts):
# Lighthouse's benchmark index of a low-tier phone (a Moto G Power, the device Lighthouse's
# mobile run stands for). Its 4x slowdown assumes a desktop of 4x that.
LOW_TIER_PHONE_INDEX = 264


def calibrated_slowdown(benchmark_index: float) -> float:
    """The CPU slowdown that makes this machine, as fast as ``benchmark_index`` says, a low-tier
    phone: Lighthouse's 4x on a machine fast enough for it, less on a slower or busier one,
    never below 1 (a machine slower than the phone is measured as it is: pessimistic)."""
    return round(min(4.0, max(1.0, benchmark_index / LOW_TIER_PHONE_INDEX)), 2)


def lighthouse(url: str, out: Path, calibrate: bool = False) -> dict:
    """One Lighthouse run (mobile defaults, simulated throttling) on ``url``: its figures; with
    ``calibrate`` also ``figures["calibrated"]``: the same run's trace audited again with the CPU
    slowdown its own benchmark index calls for (:func:`calibrated_slowdown`; no second load)."""
    flags = CHROME_FLAGS + (" --ignore-certificate-errors" if url.startswith("https:") else "")
    saved = out.with_name(out.stem + "-artifacts")
    cmd = [str(LIGHTHOUSE), url, "--quiet", "--output=json", f"--output-path={out}",
           "--only-categories=performance,accessibility", f"--chrome-flags={flags}",
           "--max-wait-for-load=60000", f"-GA={saved}"]
    # Chrome's profile goes under a folder of ours (chrome-launcher uses TMPDIR), so a run cut
    # short (Ctrl+C, the timeout) can stop the browser it started, by pid: found by that path.
    tmp = out.parent / "chrome-tmp"
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ, CHROME_PATH=CHROMIUM, TMPDIR=str(tmp))
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    except BaseException:
        stop_browsers_under(tmp)
        raise
    if done.returncode != 0 or not out.exists():
        stop_browsers_under(tmp)
        raise SystemExit(f"lighthouse failed on {url}:\n{done.stderr[-3000:]}")
    figures = figures_of(out)
    if calibrate:
        slowdown = calibrated_slowdown(figures["benchmark_index"])
        again = out.with_name(out.stem + "-calibrated.json")
        artifacts = saved / "artifacts.json"
        data = json.loads(artifacts.read_text(encoding="utf-8"))
        data["settings"]["throttling"]["cpuSlowdownMultiplier"] = slowdown  # Lantern applies it when auditing
        artifacts.write_text(json.dumps(data), encoding="utf-8")
        redo = subprocess.run([str(LIGHTHOUSE), url, "--quiet", "--output=json", f"--output-path={again}",
                               "--only-categories=performance,accessibility", f"-A={saved}",
                               "--max-wait-for-load=60000", f"--chrome-flags={flags}",
                               f"--throttling.cpuSlowdownMultiplier={slowdown}"],
                              env=env, capture_output=True, text=True, timeout=600)
        if redo.returncode != 0 or not again.exists():
            raise SystemExit(f"lighthouse -A failed on {url}:\n{redo.stderr[-3000:]}")
        figures["calibrated"] = figures_of(again)
    shutil.rmtree(saved, ignore_errors=True)  # the trace: megabytes, not kept
    return figures


def figures_of(out: Path) -> dict:
    """The figures of the Lighthouse report ``out``."""
    report = json.loads(out.read_text(encoding="utf-8"))
    audits = report["audits"]
    chains = audits.get("critical-request-chains", {}).get("details", {}).get("chains", {})

    def depth(node: dict) -> int:
        kids = node.get("children", {})
        return 1 + max((depth(k) for k in kids.values()), default=0)

    items = audits["network-requests"]["details"]["items"]
    failed_a11y = [a for a in report["categories"]["accessibility"]["auditRefs"]
                   if audits[a["id"]].get("score") is not None and audits[a["id"]]["score"] < 1 and a["weight"] > 0]
    return {
        "performance": report["categories"]["performance"]["score"],
        "accessibility": report["categories"]["accessibility"]["score"],
        "fcp_ms": round(audits["first-contentful-paint"]["numericValue"]),
        "lcp_ms": round(audits["largest-contentful-paint"]["numericValue"]),
        "tbt_ms": round(audits["total-blocking-time"]["numericValue"]),
        "cls": round(audits["cumulative-layout-shift"]["numericValue"], 3),
        "speed_index_ms": round(audits["speed-index"]["numericValue"]),
        "requests": len(items),
        "transfer_kib": round(sum(i.get("transferSize", 0) for i in items) / 1024, 1),
        "resource_kib": round(sum(i.get("resourceSize", 0) for i in items) / 1024, 1),
        "critical_chain_depth": max((depth(c) for c in chains.values()), default=0),
        "render_blocking": [i.get("url") for i in audits.get("render-blocking-resources", {})
                            .get("details", {}).get("items", [])],
        "accessibility_failed": [a["id"] for a in failed_a11y],
        # Lighthouse's own CPU reading of this machine (it expects ~1000+ for its 4x to mean a phone)
        "benchmark_index": round(report.get("environment", {}).get("benchmarkIndex", 0)),
        "cpu_slowdown": report["configSettings"]["throttling"]["cpuSlowdownMultiplier"],
    }


async def axe_all(base: str) -> dict:
    from browser_support import chromium

    found: dict[str, dict] = {}
    async with chromium() as browser:
        for lang in LOCALES:
            async for screen, page in main_screens(browser, base, lang, name=f"Audit {lang}"):
                violations = await run_axe(page)
                found[f"{lang} {screen}"] = {
                    "violations": [{"id": v["id"], "impact": v["impact"], "nodes": len(v["nodes"])} for v in violations],
                    "blocking": describe(blocking(violations)),
                }
    return found


def open_side(name: str, app: Path, out: Path, nginx: bool) -> tuple[Server, Nginx | None, dict[str, str]]:
    """A server of ``app`` (and nginx before it), signed in, a Prší table made: its pages."""
    server = Server(out / f"webapp-{name}.log", app)
    init_data = post(server.url + "api/local/login", {"name": "Audit", "language": "en"})["init_data"]
    table = post(server.url + "api/local/tables", {"game": "prsi", "players": 3}, init_data)["table"]["id"]
    fragment = f"#tgWebAppData={quote(init_data, safe='')}"
    pages = {"home": server.url, "table": f"{server.url}?notg&table={table}{fragment}"}
    proxy = None
    if nginx:
        try:
            proxy = Nginx(out / f"nginx-{name}", server.port, app / "deploy" / "nginx.conf")
        except BaseException:
            server.stop()
            raise
        pages["home via nginx"] = proxy.url
        pages["table via nginx"] = f"{proxy.url}?notg&table={table}{fragment}"
    return server, proxy, pages


def summarize(name: str, runs: list[dict]) -> dict:
    """The median run by performance score, with every run's main figures beside it."""
    runs = sorted(runs, key=lambda r: r["performance"])
    median = dict(runs[len(runs) // 2])
    median["runs_performance"] = [r["performance"] for r in runs]
    for key in ("fcp_ms", "lcp_ms", "tbt_ms"):
        median[f"runs_{key}"] = sorted(r[key] for r in runs)
    median["median_fcp_ms"] = statistics.median(r["fcp_ms"] for r in runs)
    median["median_lcp_ms"] = statistics.median(r["lcp_ms"] for r in runs)
    median["runs_benchmark_index"] = [r["benchmark_index"] for r in runs]
    median["runs_cpu_slowdown"] = [r["cpu_slowdown"] for r in runs]
    print(f"lighthouse {name}: performance {median['performance']:.2f} (runs {median['runs_performance']}), "
          f"FCP {median['fcp_ms']} ms, LCP {median['lcp_ms']} ms, TBT {median['tbt_ms']} ms (runs {median['runs_tbt_ms']}), "
          f"accessibility {median['accessibility']:.2f}, {median['requests']} requests, "
          f"{median['transfer_kib']} KiB transferred ({median['resource_kib']} KiB uncompressed), "
          f"critical chain depth {median['critical_chain_depth']}; Lighthouse's CPU benchmark index "
          f"{median['runs_benchmark_index']}, CPU slowdown {median['runs_cpu_slowdown']}", flush=True)
    return median


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/audit.py", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="Lighthouse runs per page (the median is kept)")
    parser.add_argument("--out", type=Path, default=ROOT / "test-output" / "audit")
    parser.add_argument("--no-lighthouse", action="store_true")
    parser.add_argument("--no-axe", action="store_true")
    parser.add_argument("--no-nginx", action="store_true", help="only the local server, not also through nginx")
    parser.add_argument("--app", type=Path, default=ROOT,
                        help="serve the webapp of this tree instead (e.g. an older commit's)")
    parser.add_argument("--compare", type=Path, metavar="TREE",
                        help="also measure this tree (e.g. `git archive` of the commit before), its runs "
                             "alternating with --app's, so both meet the same machine load (locally only)")
    parser.add_argument("--calibrate", action="store_true",
                        help="CPU slowdown from the machine's measured speed (Lighthouse's benchmark index of "
                             "the run before) so the emulated CPU is a low-tier phone's, instead of a fixed 4x "
                             "that on a busy machine emulates a phone many times slower")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with open("/proc/loadavg", encoding="ascii") as f:
        load = f.read().split()[:3]
    summary: dict = {"load_before": load, "chromium": subprocess.run([CHROMIUM, "--version"], capture_output=True,
                                                                    text=True).stdout.strip()}
    nginx = bool(NGINX) and not args.no_nginx and not args.no_lighthouse
    sides: dict[str, tuple[Server, Nginx | None, dict[str, str]]] = {}
    missed: list[str] = []
    try:
        sides["after"] = open_side("after", args.app, args.out, nginx)
        if args.compare:
            sides["before"] = open_side("before", args.compare, args.out, False)
        if not args.no_lighthouse:
            summary["lighthouse"] = lighthouse_version()
            runs: dict[tuple[str, str], list[dict]] = {}
            for i in range(args.runs):
                for page in sides["after"][2]:
                    for side, (_, _, pages) in sides.items():
                        if page not in pages:
                            continue
                        slug = f"{side}-{page}".replace(" ", "-")
                        found = lighthouse(pages[page], args.out / f"lighthouse-{slug}-{i}.json", args.calibrate)
                        runs.setdefault((side, page), []).append(found)
            summary["pages"] = {}
            for (side, page), found in runs.items():
                label = page if not args.compare else f"{page} ({side})"
                summary["pages"][label] = median = summarize(label, found)
                if args.calibrate:
                    summary["pages"][label + ", calibrated CPU"] = median = summarize(
                        label + ", calibrated CPU", [r["calibrated"] for r in found])
                if side != "after":
                    continue
                for key in ("performance", "accessibility"):
                    if median[key] < TARGETS[key]:
                        missed.append(f"{page}: {key} {median[key]} < {TARGETS[key]} ({median['accessibility_failed']})")
                for key in ("fcp_ms", "lcp_ms"):
                    if median[key] > TARGETS[key]:
                        missed.append(f"{page}: {key} {median[key]} > {TARGETS[key]}")
        if not args.no_axe:
            summary["axe"] = axe_version()
            summary["axe_screens"] = asyncio.run(axe_all(sides["after"][0].url))
            for screen, found in summary["axe_screens"].items():
                counts = ", ".join(f"{v['impact']} {v['id']} x{v['nodes']}" for v in found["violations"]) or "none"
                print(f"axe {screen}: {counts}", flush=True)
                if found["blocking"]:
                    missed.append(f"axe {screen}:\n{found['blocking']}")
    finally:
        for server, proxy, _ in sides.values():
            if proxy is not None:
                proxy.stop()
            server.stop()
    with open("/proc/loadavg", encoding="ascii") as f:
        summary["load_after"] = f.read().split()[:3]
    summary["missed"] = missed
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"Lighthouse {summary.get('lighthouse')}, axe-core {summary.get('axe')}, {summary['chromium']}; "
          f"load {' '.join(load)} -> {' '.join(summary['load_after'])}; figures in {args.out / 'summary.json'}")
    for line in missed:
        print("MISSED", line)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
