// The settings form: what it holds becomes the parameters of each POST /v1/responses.

/** A setting the form holds that the API would refuse (bad JSON …); shown in the page. */
export class SettingsError extends Error {}

const byId = (id) => document.getElementById(id);

function parseJson(text, what) {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new SettingsError(`${what}: not valid JSON (${error.message})`);
  }
}

/** The tool_choice the field names: empty → none sent; auto | none | required; JSON; else a function's name. */
function toolChoice(text) {
  const choice = text.trim();
  if (!choice) return undefined;
  if (["auto", "none", "required"].includes(choice)) return choice;
  if (choice.startsWith("{")) return parseJson(choice, "Tool choice");
  return { type: "function", name: choice };
}

function numberField(id, what) {
  const text = byId(id).value.trim();
  if (!text) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value)) throw new SettingsError(`${what}: not a number`);
  return value;
}

/** The request parameters the form sets (model, reasoning, instructions, tools, tool_choice, text, sampling). */
export function requestParams() {
  const params = {};
  const model = byId("model").value;
  if (model) params.model = model;
  const effort = byId("effort").value;
  if (effort) params.reasoning = { effort };
  const instructions = byId("instructions").value.trim();
  if (instructions) params.instructions = instructions;
  const tools = byId("tools").value.trim();
  if (tools) {
    const list = parseJson(tools, "Tools");
    if (!Array.isArray(list)) throw new SettingsError("Tools: a JSON list of tools, [ … ]");
    params.tools = list;
  }
  const choice = toolChoice(byId("tool-choice").value);
  if (choice !== undefined) params.tool_choice = choice;
  const schema = byId("schema").value.trim();
  if (schema) {
    const parsed = parseJson(schema, "Structured output");
    params.text = { format: { type: "json_schema", name: "answer", schema: parsed, strict: true } };
  }
  const temperature = numberField("temperature", "Temperature");
  if (temperature !== undefined) params.temperature = temperature;
  const limit = numberField("max-output-tokens", "Max output tokens");
  if (limit !== undefined) params.max_output_tokens = Math.trunc(limit);
  return params;
}

/** The API key typed in the form ("" for none). */
export function apiKey() {
  return byId("api-key").value.trim();
}

/** Fill the model list with `ids`, the first chosen. */
export function showModels(ids) {
  const select = byId("model");
  select.replaceChildren();
  for (const id of ids) {
    const option = document.createElement("option");
    option.value = id;
    option.textContent = id;
    select.append(option);
  }
}
