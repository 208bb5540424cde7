// The official JavaScript SDK against an Open Responses server.
//
// node responses.cjs BASE_URL MODEL PROMPT
// prints JSON lines: {"step": "create", "response": …} for client.responses.create(),
// then {"step": "event", "event": …} for each event of client.responses.stream(),
// then {"step": "final", "response": …} for the stream's finalResponse().
// An SDK error is printed as {"step": "error", "name": …, "status": …, "message": …}
// and the script exits with 1.
"use strict";

const OpenAI = require("openai");

function emit(record) {
  process.stdout.write(JSON.stringify(record) + "\n");
}

async function main() {
  const [baseURL, model, prompt] = process.argv.slice(2);
  const client = new OpenAI({ baseURL, apiKey: "dummy-key", maxRetries: 0 });

  const created = await client.responses.create({ model, input: prompt });
  emit({ step: "create", response: created, output_text: created.output_text });

  const stream = client.responses.stream({ model, input: prompt });
  for await (const event of stream) {
    emit({ step: "event", event });
  }
  const final = await stream.finalResponse();
  emit({ step: "final", response: final, output_text: final.output_text });
}

main().catch((error) => {
  emit({ step: "error", name: error.constructor.name, status: error.status ?? null, message: String(error.message) });
  process.exit(1);
});
