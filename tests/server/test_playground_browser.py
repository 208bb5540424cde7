"""The playground in a real headless browser (Debian's chromium under Selenium), against
one live server per module whose scripted model answers by what the user wrote: a turn
streams into the page, the debug view shows and hides the analysis channel, a function
tool call is answered by hand and the turn goes on, the envelope panel shows the prompt
with its control tokens marked, the stop button ends a stream, API errors show in the
page, a narrow window still works, and markup in text never runs.

``OPENCHATML_PLAYGROUND_SCREENSHOTS=docs/images`` saves the screenshots the docs show
(end-user view, debug view, envelope panel) there; else into the test's temporary folder.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from live import KEY, LiveServer, ScriptedEngine, completion

from openchatml import Message
from openchatml.core.encoding import load_encoding
from openchatml.responses.crypto import Sealer
from openchatml.server.envelopes import EnvelopeLog
from openchatml.server.service import ResponseService

sys.path.insert(0, str(Path(__file__).parents[1]))
from browser_harness import chromium_or_skip

pytestmark = pytest.mark.browser

ENCODING = load_encoding()
XSS = '<img src=x onerror="window.__xss = 1"><script>window.__xss = 2</script>'
STORY = (
    "The lighthouse keeper climbs two hundred and twelve steps every evening, trims the wick, "
    "winds the clockwork that turns the lens, and writes one line in the log before he sleeps."
)
THINK = Message.assistant(
    "The user asks about the keeper. I recall the log entry; answer briefly.", channel="analysis"
)
PREAMBLE = Message.assistant("Let me look up the weather first.", channel="commentary")
CALL = Message.tool_call("functions.get_weather", '{"city": "Paris"}')
WEATHER_THINK = Message.assistant("Need current weather: call get_weather for Paris.", channel="analysis")
WEATHER_ANSWER = Message.assistant("It is 21 degrees and sunny in Paris.", channel="final")
WEATHER_TOOL = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The current weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


def last_user_text(text: str) -> str:
    start = text.rfind("<|start|>user<|message|>")
    if start < 0:
        return ""
    body = text[start + len("<|start|>user<|message|>") :]
    return body[: body.find("<|end|>")]


def script(prompt: Sequence[int]) -> list[int]:
    """What the scripted model says, by the conversation so far."""
    text = ENCODING.decode(prompt)
    if text.rfind("to=assistant<|channel|>commentary<|message|>") > text.rfind("<|start|>user"):
        return completion(WEATHER_ANSWER)  # a function's output came back
    asked = last_user_text(text)
    if "weather" in asked.lower():
        return completion(WEATHER_THINK, PREAMBLE, CALL)
    if "<img" in asked:
        return completion(Message.assistant(f"You wrote {XSS} and I echo it.", channel="final"))
    if "slowly" in asked:
        return completion(Message.assistant(" ".join(["word"] * 400), channel="final"))
    return completion(THINK, Message.assistant(STORY, channel="final"))


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    engine = ScriptedEngine(script, chunk=2, delay=0.03)
    service = ResponseService(engine, None, sealer=Sealer(KEY), envelopes=EnvelopeLog())
    with LiveServer(service) as live:
        yield live


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chromium_or_skip()
    yield driver
    driver.quit()


@pytest.fixture
def page(server: LiveServer, browser: Any) -> Any:
    """The playground freshly loaded, its model list filled."""
    browser.set_window_size(1400, 1000)
    browser.get(server.url + "/")
    wait_for(browser, "document.querySelector('#model option[value=\"scripted-model\"]') !== null")
    return browser


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = os.environ.get("OPENCHATML_PLAYGROUND_SCREENSHOTS")
    return Path(folder) if folder else tmp_path


def wait_for(driver: Any, condition: str, timeout: float = 20.0) -> Any:
    """The value of the JS expression ``condition`` once truthy (fails after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(f"return ({condition});")
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {condition}")


def by_css(driver: Any, selector: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, selector)


def texts(driver: Any, selector: str) -> list[str]:
    """The text of each element ``selector`` matches, in document order."""
    found: list[str] = driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent);", selector
    )
    return found


def send(driver: Any, text: str) -> None:
    from selenium.webdriver.common.keys import Keys

    box = by_css(driver, "#prompt")
    box.clear()
    box.send_keys(text, Keys.ENTER)


def turn_ended(driver: Any, count: int = 1) -> None:
    """Wait until ``count`` responses have ended (each turn's status says how)."""
    wait_for(
        driver,
        "[...document.querySelectorAll('.turn.assistant .status')]"
        f".filter(s => /completed|incomplete|failed|stopped/.test(s.textContent)).length >= {count}",
    )


def test_a_turn_streams_into_the_page(page: Any) -> None:
    page.execute_script(
        """
        window.__lengths = [];
        new MutationObserver(() => {
          const body = document.querySelector('.item.final .body');
          if (body) window.__lengths.push(body.textContent.length);
        }).observe(document.getElementById('transcript'),
                   {subtree: true, childList: true, characterData: true});
        """
    )
    send(page, "Tell me about the keeper")
    turn_ended(page)
    lengths = page.execute_script("return window.__lengths;")
    growing = sorted(set(lengths))
    assert len(growing) >= 3, lengths  # the answer grew over several frames, not at once
    assert growing[-1] == len(STORY)
    assert by_css(page, ".item.final .body").text == STORY
    assert by_css(page, ".turn.user").text == "Tell me about the keeper"
    assert by_css(page, "#prompt").get_attribute("value") == ""
    assert "completed" in by_css(page, ".turn.assistant .status").text


def test_debug_toggle_shows_and_hides_analysis(page: Any, shots: Path) -> None:
    send(page, "Tell me about the keeper")
    turn_ended(page)
    reasoning = by_css(page, ".item.reasoning")
    assert not reasoning.is_displayed()  # the end-user view: no chain of thought
    assert by_css(page, ".item.final").is_displayed()
    page.save_screenshot(str(shots / "playground-user.png"))
    by_css(page, "#debug-toggle").click()
    assert reasoning.is_displayed()
    assert "I recall the log entry" in reasoning.text
    by_css(page, "#debug-toggle").click()
    assert not reasoning.is_displayed()


def test_function_call_round_trip(page: Any, shots: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    by_css(page, "#tools").send_keys(json.dumps(WEATHER_TOOL, indent=1))
    send(page, "What is the weather in Paris?")
    turn_ended(page)
    call = by_css(page, ".item.call")
    assert "get_weather" in call.text and '{"city": "Paris"}' in by_css(page, ".item.call .args").text
    preamble = by_css(page, ".item.preamble")
    assert preamble.is_displayed() and preamble.text == "Let me look up the weather first."
    assert not by_css(page, ".item.reasoning").is_displayed()
    box = by_css(page, ".call-output textarea")
    assert page.switch_to.active_element == box
    assert by_css(page, "#send").get_attribute("disabled") is not None  # the call waits for its output
    box.send_keys('{"temperature": 21, "sky": "sunny"}', Keys.ENTER)
    turn_ended(page, 2)
    assert texts(page, ".item.final .body") == ["It is 21 degrees and sunny in Paris."]
    assert by_css(page, ".item.call .output").text == '{"temperature": 21, "sky": "sunny"}'
    by_css(page, "#debug-toggle").click()
    wait_for(page, "document.querySelectorAll('#envelope .step').length >= 1")
    page.save_screenshot(str(shots / "playground-debug.png"))
    # the second response's prompt holds what the user typed as the function's output
    prompt = "".join(texts(page, "#envelope .tokens.prompt .tok"))
    reply = '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{"temperature": 21'
    assert reply in prompt


def test_envelope_panel_marks_control_tokens(page: Any, shots: Path) -> None:
    send(page, "Tell me about the keeper")
    turn_ended(page)
    wait_for(page, "document.querySelector('#envelope .tokens.prompt .tok.special-start') !== null")
    start = by_css(page, "#envelope .tokens.prompt .tok.special-start")
    assert start.text == "<|start|>" and start.get_attribute("title") == "id 200006"
    plain = by_css(page, "#envelope .tokens.prompt .tok:not(.special)")
    assert start.value_of_css_property("background-color") != plain.value_of_css_property("background-color")
    specials = texts(page, "#envelope .tokens.completion .tok.special")
    assert "<|channel|>" in specials and specials[-1] == "<|return|>"
    assert len(texts(page, "#envelope .tok.special-message")) >= 3
    by_css(page, "input[name='envelope-mode'][value='ids']").click()
    ids = by_css(page, "#envelope .ids")
    assert ids.is_displayed() and ids.text.startswith("200006 ")
    assert not by_css(page, "#envelope .tokens.prompt").is_displayed()
    by_css(page, "input[name='envelope-mode'][value='tokens']").click()
    by_css(page, "#events > summary").click()
    events = texts(page, "#event-list > li summary")
    assert events[0] == "0 response.created" and events[-1].endswith("response.completed")
    assert any("response.output_text.delta" in event for event in events)
    by_css(page, "#inspector").screenshot(str(shots / "playground-envelope.png"))


def test_markup_in_text_never_runs(page: Any) -> None:
    send(page, XSS)
    turn_ended(page)
    time.sleep(0.3)
    assert page.execute_script("return window.__xss;") is None
    assert texts(page, "#transcript img, #transcript script") == []
    assert by_css(page, ".turn.user").text == XSS
    assert by_css(page, ".item.final .body").text == f"You wrote {XSS} and I echo it."
    assert texts(page, "#envelope img, #event-list img") == []


def test_stop_ends_the_stream(page: Any) -> None:
    send(page, "Say a word, slowly")
    wait_for(page, "[...document.querySelectorAll('.item.final .body')].some(e => e.textContent.length > 10)")
    by_css(page, "#stop").click()
    turn_ended(page)
    assert by_css(page, ".turn.assistant .status").text == "stopped"
    written = by_css(page, ".item.final .body").text
    assert len(written) < len(" ".join(["word"] * 400))
    assert by_css(page, "#send").get_attribute("disabled") is None
    assert by_css(page, "#stop").get_attribute("disabled") is not None


def test_api_errors_show_in_the_page(page: Any) -> None:
    by_css(page, "#tool-choice").send_keys("required")  # and no tools: the API refuses it
    send(page, "Tell me about the keeper")
    wait_for(page, "!document.getElementById('error').hidden")
    error = by_css(page, "#error")
    assert error.get_attribute("role") == "alert"
    assert error.text.startswith("HTTP 400 invalid_request_error")
    by_css(page, "#tool-choice").clear()
    by_css(page, "#tools").send_keys("[not json")
    send(page, "again")
    wait_for(page, "document.getElementById('error').textContent.startsWith('settings')")
    assert "Tools: not valid JSON" in by_css(page, "#error").text


def test_shift_enter_is_a_new_line_and_a_narrow_window_works(page: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    page.set_window_size(420, 900)
    box = by_css(page, "#prompt")
    box.click()
    ActionChains(page).send_keys("first line").key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(
        Keys.SHIFT
    ).send_keys("second line").perform()
    assert box.get_attribute("value") == "first line\nsecond line"
    assert texts(page, ".turn") == []
    box.send_keys(Keys.ENTER)
    turn_ended(page)
    assert by_css(page, ".turn.user").text == "first line\nsecond line"
    width = page.execute_script("return [document.documentElement.scrollWidth, window.innerWidth];")
    assert width[0] <= width[1]  # nothing wider than the window
    assert by_css(page, "#send").is_displayed() and by_css(page, ".item.final").is_displayed()
