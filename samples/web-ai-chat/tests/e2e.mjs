// Browser test of the web chat: drives the running sample with Playwright (playwright-core) in Chromium.
//
// Expects the sample running at WEB_CHAT_URL over `ironhive run --server` on a model scripted in this order
// (tests/e2e/test_sample_web_chat.py sets it up):
//   1. text + write_file(notes.md)       -> approved            2. slow streamed Markdown answer with reasoning
//   3. write_file(secrets.md)            -> rejected            4. text answer
//   5. write_file(draft.md)              -> approved, edited    6. text answer
//   7. a very slow stream                -> Stop                8. text answer (the chat goes on)
//   9. a provider error (400)                                   10. text answer after resuming the session
//  11. a streamed GitHub Flavored Markdown answer (table, task list, strikethrough, code), then checked at 1280 and
//      390 px wide (the sessions sidebar collapses into a drawer below 700 px)
//
// Environment: WEB_CHAT_URL, WEB_CHAT_WORKDIR (the agent's folder), WEB_CHAT_ARTIFACTS (screenshots),
// CHROMIUM_PATH (default /usr/bin/chromium). Prints "ok - <step>" per step and a final "RESULT {json}" line.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";

import { chromium } from "playwright-core";

const baseUrl = process.env.WEB_CHAT_URL ?? "http://127.0.0.1:3000";
const workDir = process.env.WEB_CHAT_WORKDIR ?? process.cwd();
const artifacts = process.env.WEB_CHAT_ARTIFACTS ?? path.resolve("test-artifacts");
const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const TIMEOUT = 20_000;

mkdirSync(artifacts, { recursive: true });

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
  ],
});
const pageErrors = [];
const consoleErrors = [];
let failed = false;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  const result = await scenario(page);
  assert.deepEqual(pageErrors, [], "the page raised errors");
  assert.deepEqual(consoleErrors, [], "the browser console logged errors");
  console.log(`RESULT ${JSON.stringify(result)}`);
} catch (error) {
  failed = true;
  console.error(`FAILED: ${error instanceof Error ? error.stack : error}`);
  console.error(`page errors: ${JSON.stringify(pageErrors)}; console errors: ${JSON.stringify(consoleErrors)}`);
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);

function step(name) {
  console.log(`ok - ${name}`);
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: false });
}

async function waitForStatus(page, status) {
  await page.waitForFunction(
    (expected) => document.querySelector('[data-testid="status"]')?.textContent === expected,
    status,
    { timeout: TIMEOUT },
  );
}

async function sendMessage(page, text) {
  const composer = page.getByTestId("composer");
  await composer.fill(text);
  await composer.press("Enter");
  await page.getByTestId("user-message").filter({ hasText: text }).last().waitFor();
}

function lastAnswer(page) {
  return page.getByTestId("assistant-message").last();
}

async function waitForTurnEnd(page) {
  await page.locator('[data-testid="assistant-message"]').last().and(page.locator('[data-done="true"]')).waitFor();
  await waitForStatus(page, "ready");
}

async function sessionIdShown(page) {
  return (await page.getByTestId("session-id").textContent())?.trim() ?? "";
}

async function scenario(page) {
  await page.goto(baseUrl);
  await waitForStatus(page, "ready");
  const sessionId = await sessionIdShown(page);
  assert.match(sessionId, /^[0-9a-f]+-[0-9a-f]{8}$/);
  step(`page loaded, session ${sessionId} ready`);

  // 1. Streamed text, then a write_file call that asks first: approve it as it is.
  await sendMessage(page, "Write the notes, please");
  const dialog = page.getByTestId("approval-dialog");
  await dialog.waitFor();
  assert.match(await dialog.innerText(), /write_file/);
  assert.match(await dialog.innerText(), /notes\.md/);
  await lastAnswer(page).getByText("I'll write the notes now.").waitFor();
  const firstCard = lastAnswer(page).getByTestId("tool-card").last();
  assert.equal(await firstCard.getAttribute("data-status"), "awaiting");
  assert.equal(existsSync(path.join(workDir, "notes.md")), false, "nothing is written before the approval");
  await shot(page, "01-approval-dialog");
  await page.getByTestId("approval-approve").click();
  await dialog.waitFor({ state: "detached" });
  step("approval dialog shown and approved");

  // The answer after the tool streams in: catch it half-way.
  await page.waitForFunction(() => {
    const answers = document.querySelectorAll('[data-testid="assistant-message"]');
    const last = answers[answers.length - 1];
    return last?.getAttribute("data-done") === "false" && /The file/.test(last.textContent ?? "");
  });
  const partial = await lastAnswer(page).innerText();
  assert.doesNotMatch(partial, /two/, "the whole answer arrived at once: not streamed");
  await shot(page, "02-streaming");
  await waitForTurnEnd(page);
  const answer = lastAnswer(page);
  assert.equal(await answer.locator(".markdown strong").first().innerText(), "notes.md");
  assert.deepEqual(await answer.locator(".markdown li").allInnerTexts(), ["one", "two"]);
  assert.equal(await firstCard.getAttribute("data-status"), "succeeded");
  assert.equal((await firstCard.getByTestId("tool-status").innerText()).trim(), "Succeeded (approved)");
  assert.match(await firstCard.getByTestId("tool-output").innerText(), /Successfully wrote/);
  const thinking = answer.getByTestId("thinking");
  assert.equal(await thinking.locator(".thinking-text").isVisible(), false, "thinking starts collapsed");
  await thinking.locator("summary").click();
  assert.equal(await thinking.locator(".thinking-text").innerText(), "Checking the result.");
  assert.equal(readFileSync(path.join(workDir, "notes.md"), "utf8"), "# Notes\n\n- streamed\n");
  assert.match(await page.getByTestId("usage").innerText(), /Last turn: 150 tokens \(120 in \/ 30 out\)/);
  await shot(page, "03-approved-tool-and-markdown");
  step("streamed Markdown, thinking, tool card succeeded, file on disk, token usage");

  // 2. Reject a call with a reason: the card shows the refusal.
  await sendMessage(page, "Now write secrets.md");
  await dialog.waitFor();
  await page.getByTestId("approval-reason").fill("Not this file.");
  await page.getByTestId("approval-reject").click();
  await waitForTurnEnd(page);
  const refused = lastAnswer(page).getByTestId("tool-card");
  assert.equal(await refused.getAttribute("data-status"), "failed");
  assert.equal((await refused.getByTestId("tool-status").innerText()).trim(), "Refused");
  assert.equal((await refused.getByTestId("tool-output").innerText()).trim(), "Approval rejected: Not this file.");
  await lastAnswer(page).getByText("Understood, I left secrets.md alone.").waitFor();
  assert.equal(existsSync(path.join(workDir, "secrets.md")), false);
  await shot(page, "04-rejected");
  step("rejected with a reason, card shows the refusal");

  // 3. Edit the arguments in the dialog, then approve the edited call.
  await sendMessage(page, "Save a draft");
  await dialog.waitFor();
  await page.getByTestId("approval-arguments").fill("{ not json");
  await page.getByTestId("approval-approve").click();
  await dialog.getByRole("alert").getByText(/not valid JSON/).waitFor();
  await page
    .getByTestId("approval-arguments")
    .fill(JSON.stringify({ path: "edited.md", content: "Edited in the dialog\n" }, null, 2));
  assert.equal((await page.getByTestId("approval-approve").innerText()).trim(), "Approve edited call");
  await shot(page, "05-editing-arguments");
  await page.getByTestId("approval-approve").click();
  // The agent judges the edited call by its rules again: a write is asked about, now with the edited arguments.
  await page.waitForFunction(
    () => {
      const area = document.querySelector('[data-testid="approval-arguments"]');
      const button = document.querySelector('[data-testid="approval-approve"]');
      return Boolean(area && button && /edited\.md/.test(area.value) && button.textContent.trim() === "Approve");
    },
    null,
    { timeout: 20000 },
  );
  await page.getByTestId("approval-approve").click();
  await waitForTurnEnd(page);
  const editedCard = lastAnswer(page).getByTestId("tool-card");
  assert.equal(await editedCard.getAttribute("data-status"), "succeeded");
  assert.equal((await editedCard.getByTestId("tool-status").innerText()).trim(), "Succeeded (approved with edits)");
  assert.match(await editedCard.locator(".tool-input pre").textContent(), /"path": "edited\.md"/);
  assert.equal(readFileSync(path.join(workDir, "edited.md"), "utf8"), "Edited in the dialog\n");
  assert.equal(existsSync(path.join(workDir, "draft.md")), false);
  step("edited arguments approved, the edited file was written");

  // 4. Stop a slow stream half-way: the turn ends and the chat goes on.
  await sendMessage(page, "Tell me a long story");
  await lastAnswer(page).getByText(/word3\b/).waitFor();
  await page.getByTestId("stop").click();
  await waitForTurnEnd(page);
  const stopped = lastAnswer(page);
  assert.equal(await stopped.getAttribute("data-stopped"), "true");
  assert.match(await stopped.getByTestId("turn-foot").innerText(), /Stopped\./);
  assert.doesNotMatch(await stopped.innerText(), /word59/, "the stream ran to its end");
  await shot(page, "06-stopped");
  await sendMessage(page, "Are you still there?");
  await waitForTurnEnd(page);
  await lastAnswer(page).getByText("Yes, still here.").waitFor();
  step("Stop ended the turn mid-stream; the next turn works");

  // 5. A provider error is shown in a banner, and the turn still ends.
  await sendMessage(page, "Break something");
  await waitForTurnEnd(page);
  const errorBanner = page.getByTestId("banner").filter({ hasText: "Agent error:" });
  await errorBanner.waitFor();
  assert.match(await errorBanner.innerText(), /The model refused this request/);
  await shot(page, "07-error-banner");
  await errorBanner.getByRole("button", { name: "Dismiss" }).click();
  await errorBanner.waitFor({ state: "detached" });
  step("server error shown in a banner");

  // 6. The stored sessions list shows this session (from `ironhive sessions list -o json`).
  await page.getByTestId("sessions-refresh").click();
  const storedEntry = page.locator(`[data-testid="stored-session"][data-session-id="${sessionId}"]`);
  await storedEntry.getByText("Write the notes, please").waitFor();
  await storedEntry.getByText(/9 messages/).waitFor();
  step("sessions list shows the stored session");

  // 7. The agent process dies: a banner says so, and the composer is disabled.
  const live = await (await fetch(`${baseUrl}/api/sessions`)).json();
  const running = live.live.filter((session) => session.running);
  assert.equal(running.length, 1, "one agent process per chat session, not per message");
  assert.equal(running[0].id, sessionId);
  process.kill(running[0].pid, "SIGKILL");
  const deathBanner = page.getByTestId("banner").filter({ hasText: "killed by SIGKILL" });
  await deathBanner.waitFor();
  await waitForStatus(page, "agent stopped");
  assert.equal(await page.getByTestId("composer").isDisabled(), true);
  await shot(page, "08-agent-died");
  step("a dying agent process is shown in a banner");

  // 8. A new chat gets its own agent; then resume the first session from the list.
  await page.getByTestId("new-chat").click();
  await page.waitForFunction(
    (old) => {
      const shown = document.querySelector('[data-testid="session-id"]')?.textContent;
      return shown && shown !== old && shown !== "no session";
    },
    sessionId,
  );
  await waitForStatus(page, "ready");
  const newSessionId = await sessionIdShown(page);
  await page.getByTestId("sessions-refresh").click();
  await storedEntry.getByTestId("resume-session").click();
  await page.waitForFunction(
    (old) => document.querySelector('[data-testid="session-id"]')?.textContent === old,
    sessionId,
  );
  await waitForStatus(page, "ready");
  await page.getByTestId("system-message").getByText(`Resumed session ${sessionId}`).waitFor();
  await sendMessage(page, "What did we do?");
  await waitForTurnEnd(page);
  await lastAnswer(page).getByText("We wrote notes.md and edited.md.").waitFor();
  await shot(page, "09-resumed");
  step("new chat, then the stored session resumed in a new agent process");

  await gfmAnswer(page);
  await narrowLayout(page);

  const after = await (await fetch(`${baseUrl}/api/sessions`)).json();
  const runningAfter = after.live.filter((session) => session.running).map((session) => session.id);
  assert.deepEqual(runningAfter.sort(), [newSessionId, sessionId].sort());

  // 9. DELETE asks an agent to shut down: it exits cleanly and the session is no longer running.
  const deleted = await fetch(`${baseUrl}/api/sessions/${newSessionId}`, { method: "DELETE" });
  assert.equal(deleted.status, 200);
  const deadline = Date.now() + TIMEOUT;
  let stillRunning = true;
  while (stillRunning && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = await (await fetch(`${baseUrl}/api/sessions`)).json();
    stillRunning = now.live.some((session) => session.id === newSessionId && session.running);
  }
  assert.equal(stillRunning, false, "the agent did not exit after shutdown");
  const events = await fetch(`${baseUrl}/api/sessions/${newSessionId}/events`);
  const reader = events.body.getReader();
  let stream = "";
  while (!stream.includes('"process_exit"')) stream += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  assert.match(stream, /"type":"process_exit","code":0/);
  step("DELETE shut the other agent down (exit code 0)");
  return { sessionId, newSessionId };
}

async function box(locator) {
  const found = await locator.boundingBox();
  assert.ok(found, "the element has no box (not rendered)");
  return found;
}

// 10. GitHub Flavored Markdown, highlighted code, and what an answer must not do (raw HTML, javascript: links).
async function gfmAnswer(page) {
  await sendMessage(page, "Show it as a table");
  await waitForTurnEnd(page);
  const answer = lastAnswer(page).locator(".markdown");
  assert.equal(await answer.locator("h4").innerText(), "Summary");
  const table = answer.locator("table");
  assert.equal(await table.count(), 1, "the GFM table is not a <table>");
  assert.deepEqual(await table.locator("thead th").allInnerTexts(), ["File", "State", "Lines"]);
  assert.deepEqual(await table.locator("tbody tr td:first-child").allInnerTexts(), ["notes.md", "edited.md", "secrets.md"]);
  const lines = table.locator("tbody tr:first-child td").nth(2);
  assert.equal(await lines.evaluate((cell) => getComputedStyle(cell).textAlign), "right");
  const boxes = answer.locator('li.task-list-item input[type="checkbox"]');
  assert.equal(await boxes.count(), 2, "task list items have no checkboxes");
  assert.deepEqual(await boxes.evaluateAll((inputs) => inputs.map((input) => [input.checked, input.disabled])), [
    [true, true],
    [false, true],
  ]);
  assert.deepEqual(await answer.locator("del").allInnerTexts(), ["write draft.md", "draft.md"]);
  const code = answer.locator("pre code.language-python");
  assert.equal((await code.innerText()).trimEnd(), 'def greet(name: str) -> str:\n    return f"Hello, {name}!"');
  assert.ok((await code.locator('span[class^="hljs-"]').count()) >= 3, "the code block has no highlight spans");
  assert.equal(await code.locator(".hljs-keyword").first().innerText(), "def");
  const keyword = await code.locator(".hljs-keyword").first().evaluate((span) => getComputedStyle(span).color);
  const plain = await code.evaluate((element) => getComputedStyle(element).color);
  assert.notEqual(keyword, plain, "highlighted code is not coloured");
  // Raw HTML stays text; a javascript: link is text; an https link opens in a new tab.
  assert.match(await answer.innerText(), /Raw <b>HTML<\/b> stays text/);
  assert.equal(await answer.locator("b").count(), 0);
  assert.deepEqual(await answer.locator("a").evaluateAll((links) => links.map((link) => [link.href, link.target])), [
    ["https://example.com/docs", "_blank"],
  ]);
  // Wide: the sessions sidebar beside the chat, no drawer toggle.
  const viewport = page.viewportSize();
  assert.equal(viewport.width, 1280);
  const sidebar = await box(page.getByTestId("sessions"));
  const chat = await box(page.getByTestId("chat"));
  assert.ok(Math.abs(sidebar.width - 280) <= 1, `sidebar ${sidebar.width} px wide`);
  assert.ok(Math.abs(chat.x - sidebar.width) <= 1 && Math.abs(chat.width + sidebar.width - 1280) <= 1);
  assert.equal(await page.getByTestId("sessions-toggle").isVisible(), false);
  await shot(page, "10-gfm-1280");
  step("GFM table, task list, strikethrough and highlighted code at 1280 px; raw HTML stays text");
}

// 11. At 390 px the chat takes the whole width; the sessions open as a drawer and close again.
async function narrowLayout(page) {
  await page.setViewportSize({ width: 390, height: 844 });
  const sessions = page.getByTestId("sessions");
  await sessions.waitFor({ state: "hidden" });
  const chat = await box(page.getByTestId("chat"));
  assert.ok(chat.width >= 0.9 * 390, `the chat is ${chat.width} px wide at 390 px`);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
  const answer = await box(lastAnswer(page));
  assert.ok(answer.x >= 0 && answer.x + answer.width <= 390, "the last answer does not fit the screen");
  const send = await box(page.getByTestId("send"));
  assert.ok(send.x + send.width <= 390, "the Send button is off screen");
  await lastAnswer(page).locator("table").scrollIntoViewIfNeeded();
  await shot(page, "11-gfm-390");
  const toggle = page.getByTestId("sessions-toggle");
  assert.equal(await toggle.getAttribute("aria-expanded"), "false");
  await toggle.click();
  await sessions.waitFor({ state: "visible" });
  const drawer = await box(sessions);
  assert.ok(drawer.x === 0 && drawer.width <= 0.85 * 390 + 1, `drawer at ${drawer.x}, ${drawer.width} px wide`);
  assert.equal(await toggle.getAttribute("aria-expanded"), "true");
  await shot(page, "12-sessions-drawer-390");
  await page.getByTestId("sessions-close").click();
  await sessions.waitFor({ state: "hidden" });
  await toggle.click();
  await sessions.waitFor({ state: "visible" });
  await page.keyboard.press("Escape");
  await sessions.waitFor({ state: "hidden" });
  await page.setViewportSize({ width: 1280, height: 900 });
  await sessions.waitFor({ state: "visible" });
  step("at 390 px the chat has the full width; the sessions open as a drawer and close");
}
