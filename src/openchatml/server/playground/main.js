// The playground's controller: the composer, one streamed POST /v1/responses per turn,
// function calls answered by hand, the two views, the inspector.
//
// The conversation is carried by resending its items: every turn sends the whole
// history (the user's messages, the items of each response, the outputs typed for its
// function calls) with store: false, so it works whether or not the server stores
// responses.

import { ApiError, getEnvelope, listModels, streamResponse } from "./api.js";
import { EnvelopePanel } from "./envelope.js";
import { SettingsError, apiKey, requestParams, showModels } from "./settings.js";
import { TurnView, bareType, userMessage } from "./transcript.js";

const byId = (id) => document.getElementById(id);
const transcript = byId("transcript");
const prompt = byId("prompt");
const sendButton = byId("send");
const stopButton = byId("stop");
const errorBox = byId("error");
const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);

const state = { history: [], controller: null, waitingForOutputs: false };
const panel = new EnvelopePanel((id) => getEnvelope(id, apiKey()));

function showError(error) {
  const detail = error.error || error;
  const parts = [detail.type, detail.code].filter(Boolean).join(" · ");
  const param = detail.param ? ` (param: ${detail.param})` : "";
  const status = error.status ? `HTTP ${error.status} ` : "";
  errorBox.textContent = `${status}${parts ? `${parts}: ` : ""}${detail.message || String(error)}${param}`;
  errorBox.hidden = false;
}

function clearError() {
  errorBox.hidden = true;
  errorBox.textContent = "";
}

function setBusy(controller) {
  state.controller = controller;
  stopButton.disabled = controller === null;
  sendButton.disabled = controller !== null || state.waitingForOutputs;
}

function scrollDown() {
  transcript.scrollTop = transcript.scrollHeight;
}

/** An output item as an input item of the next turn. */
function asInput(item) {
  const copy = { ...item };
  delete copy.status;
  return copy;
}

function statusLine(response) {
  const usage = response.usage
    ? ` · ${response.usage.input_tokens} in, ${response.usage.output_tokens} out`
    : "";
  const why = response.incomplete_details ? ` (${response.incomplete_details.reason})` : "";
  return `${response.status}${why}${usage}`;
}

/** Send the conversation, stream the answer into the page, then fetch its envelope. */
async function runTurn() {
  let params;
  try {
    params = requestParams();
  } catch (error) {
    if (error instanceof SettingsError) showError({ type: "settings", message: error.message });
    else throw error;
    return;
  }
  clearError();
  const view = new TurnView(transcript);
  const turn = panel.addTurn(`Response ${panel.turns.length + 1}`);
  const controller = new AbortController();
  setBusy(controller);
  let final = null;
  try {
    await streamResponse({ ...params, input: state.history, store: false }, {
      apiKey: apiKey(),
      signal: controller.signal,
      onEvent(event) {
        const data = event.data;
        panel.addEvent(turn, event);
        if (data.response && data.response.id) turn.id = data.response.id;
        view.handle(data);
        if (TERMINAL.has(data.type)) final = data.response;
        if (data.type === "error") showError(data.error || data);
        scrollDown();
      },
    });
  } catch (error) {
    if (error.name === "AbortError") view.setStatus("stopped", true);
    else {
      view.setStatus("failed", true);
      showError(error instanceof ApiError ? error : { type: "network", message: error.message });
    }
  } finally {
    setBusy(null);
  }
  if (final) finishTurn(view, final);
  await panel.finish(turn);
}

function finishTurn(view, response) {
  view.setStatus(statusLine(response), response.status !== "completed");
  if (response.error) showError(response.error);
  const output = response.output || [];
  state.history.push(...output.map(asInput));
  const calls = output.filter((item) => bareType(item.type) === "function_call");
  if (calls.length) askOutputs(view, calls);
}

/** A box per function call; once every call has its output, the turn goes on. */
function askOutputs(view, calls) {
  state.waitingForOutputs = true;
  setBusy(null);
  const outputs = new Map();
  let first = null;
  for (const call of calls) {
    const box = view.askOutput(call, (output) => {
      outputs.set(call.call_id, { type: "function_call_output", call_id: call.call_id, output });
      if (outputs.size < calls.length) return;
      state.waitingForOutputs = false;
      state.history.push(...calls.map((each) => outputs.get(each.call_id)));
      runTurn();
    });
    first = first || box;
  }
  if (first) first.focus();
  scrollDown();
}

function send() {
  const text = prompt.value;
  if (!text.trim() || state.controller || state.waitingForOutputs) return;
  prompt.value = "";
  state.history.push({ type: "message", role: "user", content: [{ type: "input_text", text }] });
  transcript.append(userMessage(text));
  scrollDown();
  runTurn();
}

function newChat() {
  if (state.controller) state.controller.abort();
  state.history = [];
  state.waitingForOutputs = false;
  transcript.replaceChildren();
  panel.clear();
  clearError();
  setBusy(null);
  prompt.focus();
}

byId("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
prompt.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
stopButton.addEventListener("click", () => {
  if (state.controller) state.controller.abort();
});
byId("new-chat").addEventListener("click", newChat);
byId("debug-toggle").addEventListener("change", (event) => {
  document.body.classList.toggle("view-debug", event.target.checked);
  document.body.classList.toggle("view-user", !event.target.checked);
});

async function loadModels() {
  try {
    showModels(await listModels(apiKey()));
  } catch (error) {
    showError(error);
  }
}

byId("api-key").addEventListener("change", loadModels);
loadModels();
document.body.dataset.ready = "true";
