"""Fast start (issue 11): the web app never imports aiogram; with a token the bot starts in
the background (bot.boot); the standard-library initData check agrees with aiogram's."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from webapp.auth import check_signature, sign_init_data, verify_init_data
from webapp.errors import ApiError

TOKEN = "123456789:AAbench-test-token-not-a-real-one-0000"


def test_the_web_app_and_local_play_import_no_telegram_library():
    code = (
        "import sys\n"
        "import webapp.__main__, webapp.app, webapp.local, webapp.auth, bot, bot.boot, bot.settings\n"
        "from webapp.app import create_app\n"
        "from webapp.settings import WebSettings\n"
        "create_app(WebSettings(local_play=True, run_worker=False), store=None)\n"
        "print(sorted(m for m in sys.modules if m == 'aiogram' or m.startswith('aiogram.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_bot_attributes_still_load_on_first_use():
    import bot

    assert callable(bot.setup_bot) and bot.BotRuntime.__name__ == "BotRuntime"
    with pytest.raises(AttributeError):
        _ = bot.no_such_thing


@pytest.mark.parametrize("fields", [
    {"user": {"id": 42, "first_name": "Anna"}, "auth_date": 1_700_000_000},
    {"user": {"id": 7, "first_name": "Иван", "last_name": "П", "username": "ivan", "language_code": "ru",
              "photo_url": "https://t.me/i/userpic/320/x.jpg"}, "auth_date": 1_700_000_001,
     "chat_instance": "-123", "chat_type": "supergroup", "start_param": "abc_DEF-1", "signature": "x" * 86},
    {"query_id": "AAH1", "user": {"id": 1, "first_name": "a&b=c", "is_premium": True}, "auth_date": 1},
])
def test_standard_library_check_agrees_with_aiogram(fields):
    from aiogram.utils.web_app import check_webapp_signature

    signed = sign_init_data(fields, TOKEN)
    assert check_signature(signed, TOKEN) is not None
    assert check_webapp_signature(TOKEN, signed)
    for bad in (signed.replace("auth_date=", "auth_date=9"), signed + "&extra=1", signed[:-1] + "0",
                signed.replace("hash=", "hush=")):
        assert (check_signature(bad, TOKEN) is not None) == check_webapp_signature(TOKEN, bad), bad
    assert check_signature(signed, "987654321:another-bot") is None
    assert not check_webapp_signature("987654321:another-bot", signed)


@pytest.mark.parametrize("user", [
    {"id": "42", "first_name": "Anna"},  # an id that is not an integer
    {"id": 42},  # no first name
    {"id": 42, "first_name": "Anna", "username": 5},
    [42, "Anna"],
])
def test_a_signed_user_of_the_wrong_shape_is_refused(user):
    signed = sign_init_data({"user": user, "auth_date": int(time.time())}, TOKEN)
    with pytest.raises(ApiError) as err:
        verify_init_data(signed, TOKEN, max_age=60)
    assert err.value.status == 401 and err.value.code == "unauthorized"


def test_the_service_benchmark_signs_initdata_the_server_accepts():
    from benchmarks.service import new_bot_token
    from benchmarks.service import sign_init_data as bench_sign

    token = new_bot_token()
    user = {"id": 7_100_000_001, "first_name": "Hráč1", "last_name": "Bench", "language_code": "cs"}
    who = verify_init_data(bench_sign(user, token), token, max_age=60)
    assert (who.id, who.name, who.language) == (7_100_000_001, "Hráč1 Bench", "cs")
    with pytest.raises(ApiError):
        verify_init_data(bench_sign(user, token), new_bot_token(), max_age=60)


async def test_a_bot_that_fails_to_start_leaves_the_app_serving_and_the_webhook_503(monkeypatch):
    import bot.app
    from bot.boot import BotBoot
    from bot.settings import BotSettings

    def broken(*_args, **_kwargs):
        raise RuntimeError("no bot today")

    monkeypatch.setattr(bot.app, "BotRuntime", broken)
    boot = BotBoot(store=None, settings=BotSettings(bot_token=TOKEN, webhook_url="https://x.example/telegram/webhook"))
    await boot.start()
    assert boot.failed and boot.ready.is_set() and boot.runtime is None
    resp = await boot.webhook(None)  # type: ignore[arg-type]  (not read when the bot is down)
    assert resp.status == 503 and resp.headers["Retry-After"] == "5"
    assert json.loads(resp.body)["ok"] is False


EXIT_DURING_IMPORT = """
import importlib, sys, threading, time
from webapp.__main__ import finish
threading.Thread(target=importlib.import_module, args=("bot.app",), name="import-bot.app", daemon=True).start()
time.sleep(float(sys.argv[1]))
finish(0)
print("returned", flush=True)
"""


def test_a_process_stopped_while_aiogram_still_imports_exits_0_every_time():
    """A drained process whose bot was still importing (``bot.boot``) ends with status 0.

    Left to the interpreter's finalization, the daemon thread importing aiogram was killed
    inside native code and about one exit in ten crashed (SIGSEGV, or SIGABRT "exception not
    rethrown"; CI saw a rolling restart's drain exit -11). Eight exits spread over the import's
    own duration, measured first (a race: the crash window is narrow, so this guards the real
    case; the next test checks the mechanism deterministically)."""
    timed = subprocess.run([sys.executable, "-c", "import time; t = time.process_time(); import bot.app; "
                            "print(time.process_time() - t)"], capture_output=True, text=True, timeout=300,
                           check=True)
    span = float(timed.stdout.strip())
    for i in range(8):
        at = span * (0.05 + 0.12 * i)
        out = subprocess.run([sys.executable, "-X", "faulthandler", "-c", EXIT_DURING_IMPORT, f"{at:.3f}"],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, (at, out.returncode, out.stderr[-2000:])
        assert "Fatal Python error" not in out.stderr, out.stderr[-2000:]


def test_finish_ends_at_once_while_a_daemon_thread_runs_and_flushes_what_was_said():
    code = ("import logging, sys, threading\n"
            "from webapp.__main__ import finish\n"
            "logging.basicConfig(level=logging.INFO)\n"
            "threading.Thread(target=threading.Event().wait, name='import-bot.app', daemon=True).start()\n"
            "sys.stdout.write('said before')\n"  # not flushed yet
            "finish(5)\n"
            "print('returned', flush=True)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 5, (out.returncode, out.stdout, out.stderr)
    assert out.stdout == "said before"
    assert "exiting without waiting for import-bot.app" in out.stderr


def test_finish_with_no_thread_left_returns_to_the_usual_exit():
    code = "from webapp.__main__ import finish\nfinish(3)\nprint('returned', flush=True)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "returned", (out.returncode, out.stdout, out.stderr)
