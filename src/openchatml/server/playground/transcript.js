// The conversation as the page shows it. Every text the user or the model wrote goes in
// as text (textContent), never as HTML.
//
// Each item of a response gets an element whose class says what it is: `final` (the
// answer), `preamble` (a commentary message: what the model says before it acts),
// `reasoning` (the analysis channel), `call` (a function call the user answers),
// `hosted` (web_search_call, code_interpreter_call, mcp_call …). The end-user view
// (body.view-user) hides what the visibility policy keeps from an end user: reasoning,
// and the channel labels; the debug view (body.view-debug) shows them.

const HOSTED_LABELS = {
  web_search_call: "web search",
  code_interpreter_call: "python",
  mcp_call: "MCP call",
  mcp_list_tools: "MCP tools listed",
  mcp_approval_request: "MCP approval request",
  file_search_call: "file search",
  image_generation_call: "image generation",
  local_shell_call: "shell",
  shell_call: "shell",
  apply_patch_call: "apply patch",
  custom_tool_call: "custom tool call",
};

/** An element `tag` with class `className` and, if given, `text` as its text. */
export function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** The item type without the Open Responses prefix of OpenAI's types (`openai:web_search_call`). */
export function bareType(type) {
  return String(type || "").replace(/^openai:/, "");
}

function textOf(parts) {
  return (parts || []).map((part) => part.text || part.refusal || "").join("");
}

/** The line saying what a hosted call did (its query, code, or tool and arguments). */
function hostedSummary(item) {
  const type = bareType(item.type);
  if (type === "web_search_call") {
    const action = item.action || {};
    return action.query || action.url || action.pattern || action.type || "";
  }
  if (type === "code_interpreter_call") return item.code || "";
  if (type === "mcp_call" || type === "mcp_approval_request") {
    return `${item.server_label || ""}.${item.name || ""}(${item.arguments || ""})`;
  }
  if (type === "mcp_list_tools") return (item.tools || []).map((tool) => tool.name).join(", ");
  return "";
}

/** A user's message in the transcript. */
export function userMessage(text) {
  const node = element("div", "turn user");
  node.append(element("div", "label", "you"), element("div", "body", text));
  return node;
}

/** One response in the transcript: its items as they stream, then its status. */
export class TurnView {
  constructor(container) {
    this.node = element("div", "turn assistant");
    this.items = new Map();
    this.status = element("div", "status", "…");
    this.node.append(this.status);
    container.append(this.node);
  }

  /** Show one streaming event (its parsed JSON). */
  handle(data) {
    const type = data.type || "";
    if (type === "response.output_item.added") this.itemAdded(data.output_index, data.item);
    else if (type === "response.output_item.done") this.itemDone(data.output_index, data.item);
    else if (type.endsWith(".delta") && typeof data.delta === "string") this.delta(type, data);
    else if (type === "response.in_progress" || type === "response.created") this.setStatus("generating…");
  }

  itemAdded(index, item) {
    const view = itemView(item);
    this.items.set(index, view);
    this.node.insertBefore(view.node, this.status);
  }

  itemDone(index, item) {
    const fresh = itemView(item);
    const old = this.items.get(index);
    if (old) old.node.replaceWith(fresh.node);
    else this.node.insertBefore(fresh.node, this.status);
    this.items.set(index, fresh);
  }

  delta(type, data) {
    const view = this.items.get(data.output_index);
    if (!view) return;
    const target = type.includes("summary") ? view.summary : view.body;
    if (!target) return;
    target.textContent += data.delta;
    if (target === view.summary) view.node.classList.remove("debug-only");
  }

  setStatus(text, failed = false) {
    this.status.textContent = text;
    this.status.classList.toggle("failed", failed);
  }

  /** Offer a box for the output of function call `item`; `onSubmit(output)` when sent. */
  askOutput(item, onSubmit) {
    const view = [...this.items.values()].find((candidate) => candidate.callId === item.call_id);
    if (!view) return;
    const form = element("form", "call-output");
    const id = `output-${item.call_id}`;
    const label = element("label", "", `Output of ${item.name}`);
    label.htmlFor = id;
    const box = element("textarea");
    box.id = id;
    box.rows = 2;
    box.placeholder = "What the function returned (JSON or text)";
    const send = element("button", "", "Send output");
    send.type = "submit";
    form.append(label, box, send);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      form.replaceWith(element("pre", "output", box.value));
      onSubmit(box.value);
    });
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    view.node.append(form);
    return box;
  }
}

/** The element of one output item: {node, body, summary, callId}. */
function itemView(item) {
  const type = bareType(item.type);
  if (type === "reasoning") return reasoningView(item);
  if (type === "message") {
    const preamble = item.phase === "commentary";
    const node = element("div", preamble ? "item preamble" : "item final");
    const body = element("div", "body", textOf(item.content));
    node.append(element("div", "label", preamble ? "commentary · preamble" : "final"), body);
    return { node, body };
  }
  if (type === "function_call") {
    const node = element("div", "item call");
    const head = element("div", "label", "function call ");
    head.append(element("code", "", item.name || ""));
    const body = element("pre", "args", item.arguments || "");
    node.append(head, body);
    return { node, body, callId: item.call_id };
  }
  const node = element("div", "item hosted");
  node.dataset.type = type;
  node.append(element("div", "label", `${HOSTED_LABELS[type] || type} · ${item.status || ""}`));
  const body = element("pre", "body", hostedSummary(item));
  const details = element("details", "raw");
  details.append(element("summary", "", "item"), element("pre", "", JSON.stringify(item, null, 2)));
  node.append(body, details);
  return { node, body };
}

// The chain of thought shows in the debug view only; its summary (reasoning.summary),
// written for an end user, in both.
function reasoningView(item) {
  const summaryText = textOf(item.summary);
  const node = element("div", summaryText ? "item reasoning" : "item reasoning debug-only");
  const label = element("div", "label debug-only", "analysis · reasoning");
  const body = element("div", "body debug-only", textOf(item.content));
  const summary = element("div", "summary", summaryText);
  node.append(label, body, summary);
  return { node, body, summary };
}
