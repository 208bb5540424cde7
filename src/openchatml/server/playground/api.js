// The server's API as the playground uses it: JSON requests, and the SSE stream of
// POST /v1/responses read with fetch and a ReadableStream (EventSource cannot POST).

/** An error answer of the API: its HTTP status and the error object ({message, type, code, param}). */
export class ApiError extends Error {
  constructor(status, error) {
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.error = error;
  }
}

function headers(apiKey, json) {
  const result = { "OpenChatML-Wire": "openresponses" };
  if (json) result["Content-Type"] = "application/json";
  if (apiKey) result.Authorization = `Bearer ${apiKey}`;
  return result;
}

/** The ApiError of a failed answer (the error shape, or the status alone). */
async function failure(answer) {
  let error = { message: `HTTP ${answer.status} ${answer.statusText}`, type: "http_error" };
  try {
    const body = await answer.json();
    if (body && body.error) error = body.error;
  } catch (ignored) {
    // not JSON: the status says it
  }
  return new ApiError(answer.status, error);
}

/** GET a JSON resource of the API. */
export async function getJson(path, apiKey) {
  const answer = await fetch(path, { headers: headers(apiKey, false) });
  if (!answer.ok) throw await failure(answer);
  return answer.json();
}

/** The ids of the models the server serves. */
export async function listModels(apiKey) {
  const body = await getJson("/v1/models", apiKey);
  return (body.data || []).map((model) => model.id);
}

/** The envelope of a response (404: the server records none, or no longer holds it). */
export function getEnvelope(responseId, apiKey) {
  return getJson(`/v1/responses/${encodeURIComponent(responseId)}/envelope`, apiKey);
}

/**
 * POST /v1/responses with stream: true; calls onEvent({event, data, raw}) for each SSE
 * event as it arrives (data parsed from JSON). Resolves when the stream ends; rejects with
 * an ApiError for an error answer, or the fetch's AbortError when `signal` aborts.
 */
export async function streamResponse(body, { apiKey, signal, onEvent }) {
  const answer = await fetch("/v1/responses", {
    method: "POST",
    headers: headers(apiKey, true),
    body: JSON.stringify({ ...body, stream: true }),
    signal,
  });
  if (!answer.ok) throw await failure(answer);
  const reader = answer.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    buffer = buffer.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const parsed = parseBlock(block);
      if (parsed) onEvent(parsed);
    }
    if (done) break;
  }
}

/** One SSE block ("event: …", "data: …" lines) as {event, data, raw}; null for [DONE] or a comment. */
function parseBlock(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  const raw = data.join("\n");
  if (!raw || raw === "[DONE]") return null;
  let parsed;
  try {
    parsed = JSON.parse(raw);
  } catch (ignored) {
    parsed = { type: event, text: raw };
  }
  return { event, data: parsed, raw };
}
