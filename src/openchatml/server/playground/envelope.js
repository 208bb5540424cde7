// The inspector: the raw envelope of a response (GET /v1/responses/{id}/envelope: per
// sampling step, the prompt and the completion as token ids, with the text of each id)
// and the SSE events the page received for it.
//
// Each token is a chip (its text; its id on hover); control tokens (<|start|>,
// <|channel|>, <|call|> … or a chat template's markers) are chips of their own style,
// classed by name (special-start, special-channel …). Three ways to read it: tokens
// (chips with borders), text (the text as one run, control tokens still marked), ids.

import { element } from "./transcript.js";

const MAX_CHIPS = 20000; // per prompt or completion; the ids view shows them all
const MAX_EVENTS = 5000; // per response

/** The class naming a control token: `<|start|>` → special-start. */
function specialClass(piece) {
  const name = piece.replace(/^<\|?|\|?>$/g, "").toLowerCase().replace(/[^a-z0-9_-]+/g, "-");
  return `special-${name || "token"}`;
}

/** The chips of one run of ids ({ids, pieces, special, omitted}). */
function tokenRun(run, what) {
  const box = element("div", `tokens ${what}`);
  const special = new Set(run.special);
  const shown = Math.min(run.ids.length, MAX_CHIPS);
  const chips = document.createDocumentFragment();
  for (let index = 0; index < shown; index += 1) {
    const piece = run.pieces[index];
    const chip = element("span", "tok", piece);
    chip.title = `id ${run.ids[index]}`;
    chip.dataset.id = String(run.ids[index]);
    if (special.has(index)) chip.classList.add("special", specialClass(piece));
    else if (!piece) chip.classList.add("partial"); // ends inside a character
    if (piece.includes("\n")) chip.classList.add("newline");
    chips.append(chip);
  }
  box.append(chips);
  const ids = element("pre", "ids", run.ids.join(" "));
  const notes = [];
  if (shown < run.ids.length) notes.push(`${run.ids.length - shown} more tokens in the ids view`);
  if (run.omitted) notes.push(`${run.omitted} more not kept by the server (its bound on ids per response)`);
  const wrapper = element("div", "run");
  wrapper.append(box, ids);
  if (notes.length) wrapper.append(element("p", "note", notes.join("; ")));
  return wrapper;
}

function runTitle(what, run) {
  const count = run.ids.length + run.omitted;
  return element("h4", "", `${what} · ${count} token${count === 1 ? "" : "s"}`);
}

/** The envelope's steps as elements. */
function envelopeView(envelope) {
  const fragment = document.createDocumentFragment();
  const format = envelope.format === "harmony" ? "Harmony" : "chat template";
  fragment.append(element("p", "note", `${envelope.steps.length} sampling step(s), rendered as ${format}.`));
  for (const step of envelope.steps) {
    const section = element("section", "step");
    section.append(element("h3", "", `Step ${step.index}`));
    section.append(runTitle("prompt", step.prompt), tokenRun(step.prompt, "prompt"));
    section.append(runTitle("completion", step.completion), tokenRun(step.completion, "completion"));
    fragment.append(section);
  }
  return fragment;
}

/** The inspector panel: one entry per response of the conversation. */
export class EnvelopePanel {
  constructor(loadEnvelope) {
    this.loadEnvelope = loadEnvelope;
    this.turns = [];
    this.select = document.getElementById("envelope-turn");
    this.view = document.getElementById("envelope");
    this.note = document.getElementById("envelope-note");
    this.eventList = document.getElementById("event-list");
    this.eventCount = document.getElementById("event-count");
    this.select.addEventListener("change", () => this.show(this.current()));
    for (const radio of document.querySelectorAll('input[name="envelope-mode"]')) {
      radio.addEventListener("change", () => {
        this.view.className = `envelope mode-${radio.value}`;
      });
    }
  }

  current() {
    return this.turns[Number(this.select.value)] || null;
  }

  /** A new response: its entry, selected; returns it (events go in with addEvent). */
  addTurn(label) {
    const turn = { label, id: null, events: [], envelope: null, failure: null };
    this.turns.push(turn);
    const option = element("option", "", label);
    option.value = String(this.turns.length - 1);
    this.select.append(option);
    this.select.value = option.value;
    this.show(turn);
    return turn;
  }

  /** One SSE event received for `turn`. */
  addEvent(turn, event) {
    if (turn.events.length >= MAX_EVENTS) return;
    turn.events.push(event);
    if (turn === this.current()) this.eventList.append(eventItem(event, turn.events.length - 1));
    this.eventCount.textContent = `(${this.current() ? this.current().events.length : 0})`;
  }

  /** Fetch `turn`'s envelope once its response has ended, and show it if selected. */
  async finish(turn) {
    if (!turn.id) return;
    try {
      turn.envelope = await this.loadEnvelope(turn.id);
    } catch (error) {
      turn.failure = error.status === 404
        ? "This server keeps no envelope of this response (serve --envelope turns it on)."
        : `The envelope could not be read: ${error.message}`;
    }
    if (turn === this.current()) this.show(turn);
  }

  show(turn) {
    this.view.replaceChildren();
    this.eventList.replaceChildren();
    if (!turn) {
      this.note.textContent = "Send a message: the prompt the model read and the tokens it wrote appear here.";
      this.eventCount.textContent = "";
      return;
    }
    turn.events.forEach((event, index) => this.eventList.append(eventItem(event, index)));
    this.eventCount.textContent = `(${turn.events.length})`;
    if (turn.envelope) {
      this.note.textContent = `Response ${turn.id}`;
      this.view.append(envelopeView(turn.envelope));
    } else {
      this.note.textContent = turn.failure || "The envelope appears once the response has ended.";
    }
  }

  clear() {
    this.turns = [];
    this.select.replaceChildren();
    this.show(null);
  }
}

/** One received event: its type in the summary, its data when opened. */
function eventItem(event, index) {
  const item = element("li");
  const details = element("details");
  const summary = element("summary", "", `${index} ${event.event}`);
  details.append(summary, element("pre", "", event.raw));
  item.append(details);
  return item;
}
