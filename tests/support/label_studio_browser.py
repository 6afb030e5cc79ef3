"""Annotating a THumB project in Label Studio's web interface, as an annotator does (Playwright, Chromium).

:func:`annotate_project` logs in through the login form, opens the project, presses "Label All Tasks" and,
for every task the labeling stream shows, clicks the rubric's choices (each group found under its heading,
the rubric item's title in ``config.xml``: several groups share the labels "0", "1", …), types the comment
and presses Submit (or Skip). The task on screen is the one the stream's ``next_task`` request answered
with; its caption must be on screen, and the annotation must be posted to that task.

Launch Chromium with :func:`launch_chromium` (Debian's ``/usr/bin/chromium`` or ``$CHROMIUM``; never
``playwright install``). The project's instructions, shown over the task when the project says so, are
closed with their × button. Requests to anything but 127.0.0.1 are refused (Label Studio's pages reference
analytics and fonts on the internet).
"""
from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from capeval.thumb.label_studio import control_titles
from capeval.thumb.rubric import RUBRIC_ITEMS

CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: Milliseconds one browser step (a click, a page, a request) may take.
STEP_TIMEOUT_MS = 60_000
_OFF_HOST = re.compile(r"^(?!https?://127\.0\.0\.1[:/])[a-z][a-z0-9+.-]*://", re.I)


def chromium_executable() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def launch_chromium(playwright):
    """Headless Chromium (the system's executable)."""
    return playwright.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS, headless=True)


class AnnotationError(AssertionError):
    """The page did not show what an annotator needs (a control, the task, the submit's answer)."""


def choice_value(value: Any) -> str:
    """The choice a number stands for, as the configuration spells it: 5 → "5", 0 → "0", 0.1 → "0.1"."""
    return f"{float(value):g}"


def _is_next_task(response) -> bool:
    return response.request.method == "POST" and "/api/dm/actions" in response.url and "id=next_task" in response.url


def _choices_group(page, title: str):
    """The ``lsf-choices`` block right after the header ``title`` (the control's header in config.xml)."""
    literal = f'"{title}"' if '"' not in title else f"'{title}'"
    return page.locator(f"xpath=//*[normalize-space(.)={literal}]/following-sibling::div"
                        "[contains(concat(' ', normalize-space(@class), ' '), ' lsf-choices ')][1]")


def _click_choice(page, title: str, value: str) -> None:
    group = _choices_group(page, title)
    if group.count() != 1:
        raise AnnotationError(f"no choices under the heading {title!r} ({group.count()} found)")
    option = group.locator(f'label:has(input[type="radio"][name="{value}"])')
    if option.count() != 1:
        shown = group.locator("input[type=radio]").evaluate_all("els => els.map(e => e.name)")
        raise AnnotationError(f"{title!r}: no choice {value!r} (shown: {shown})")
    option.click()
    radio = option.locator("input[type=radio]")
    if not radio.is_checked():
        raise AnnotationError(f"{title!r}: clicking {value!r} did not select it")


def _close_instructions(page, modal, closed: list[int]) -> None:
    modal.locator('button[aria-label="Close modal"]').click()
    modal.wait_for(state="hidden")
    closed.append(1)


def _login(page, server_url: str, email: str, password: str) -> None:
    page.goto(server_url + "/user/login/")
    page.fill("#email", email)
    page.fill("#password", password)
    page.click("#login-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    if "/user/login" in page.url:
        raise AnnotationError(f"logging in as {email} was refused (still at {page.url})")


def annotate_project(browser, server_url: str, email: str, password: str, project_id: int,
                     answers: Mapping[int, Mapping[str, Any]], artifacts: Path | None = None) -> int:
    """Label every task the stream gives ``email`` with ``answers[task id]``; the number submitted.

    An answer: ``precision``, ``recall`` (1–5), ``fluency``, ``conciseness``, ``inclusive`` (numbers; 0 clicks
    the "0" choice, None or absent clicks nothing) and ``comment`` (typed when not empty); ``skip: True``
    presses Skip instead. A task shown twice, a task without an answer, a missing control or a submit the
    server refuses fails, with a screenshot and the page's HTML under ``artifacts``.
    """
    titles = control_titles()
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.route(_OFF_HOST, lambda route: route.abort())
    page = context.new_page()
    page.set_default_timeout(STEP_TIMEOUT_MS)
    # the project's instructions (show_instruction) open over the task: read, then closed, as annotators do
    closed: list[int] = []
    instructions = page.locator(".lsf-modal-ls_visible", has_text="Labeling Instructions")
    page.add_locator_handler(instructions, lambda modal: _close_instructions(page, modal, closed))
    submitted, seen = 0, []
    try:
        _login(page, server_url, email, password)
        page.goto(f"{server_url}/projects/{project_id}/")
        label_all = page.get_by_role("button", name=re.compile(r"Label All Tasks"))
        with page.expect_response(_is_next_task) as next_response:
            label_all.click()
        while True:
            response = next_response.value
            if response.status == 404:  # "There are no tasks for <user>": the stream is finished
                break
            if response.status != 200:
                raise AnnotationError(f"next task: HTTP {response.status}: {response.text()[:300]}")
            task = response.json()
            task_id = task["id"]
            if task_id in seen:
                raise AnnotationError(f"task {task_id} shown twice to {email}")
            seen.append(task_id)
            if task_id not in answers:
                raise AnnotationError(f"task {task_id} (item {task['data'].get('item')}) has no answer")
            answer = answers[task_id]
            caption = task["data"]["caption"]
            page.get_by_text(caption, exact=True).wait_for(state="visible")
            if not answer.get("skip"):
                for name in RUBRIC_ITEMS:
                    if answer.get(name) is not None:
                        _click_choice(page, titles[name], choice_value(answer[name]))
                if answer.get("comment"):
                    page.locator('textarea[name="comment"]').fill(answer["comment"])
            button = page.locator('[data-testid="bottombar-skip-button"]' if answer.get("skip")
                                  else '[data-testid="bottombar-submit-button"]')
            with page.expect_response(lambda r: r.request.method == "POST"
                                      and f"/api/tasks/{task_id}/annotations" in r.url) as posted, \
                    page.expect_response(_is_next_task) as next_response:
                button.click()
            if posted.value.status != 201:
                raise AnnotationError(f"task {task_id}: the annotation was answered HTTP {posted.value.status}: "
                                      f"{posted.value.text()[:300]}")
            submitted += 1
    except Exception as exc:
        if artifacts is not None:
            artifacts.mkdir(parents=True, exist_ok=True)
            stem = artifacts / f"label-studio-{email.split('@')[0]}-failure"
            try:
                page.screenshot(path=str(stem) + ".png", full_page=True)
                Path(str(stem) + ".html").write_text(page.content(), encoding="utf-8")
            except Exception:  # noqa: BLE001 - the original error matters more
                pass
            raise AnnotationError(f"{email}, after {submitted} submitted (tasks {seen}): {exc} "
                                  f"[screenshot: {stem}.png]") from exc
        raise
    finally:
        context.close()
    return submitted
