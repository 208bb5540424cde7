// The OpenAI Agents SDK for JavaScript (@openai/agents) against an Open Responses server.
//
// node agents.cjs BASE_URL MODEL TOOL_PROMPT JSON_PROMPT
// runs, with the SDK's default model (the Responses API over HTTP) on a client pointed at
// BASE_URL and tracing off, an agent that has one tool (get_weather, a zod schema):
//   run(agent, TOOL_PROMPT)                   -> {"step": "run", …}
//   run(agent, TOOL_PROMPT, {stream: true})   -> {"step": "event", …} per event, then {"step": "streamed", …}
//   run(reporter, JSON_PROMPT)                -> {"step": "structured", …} (outputType: a zod object)
// Each tool call is printed as {"step": "tool", "city": …} when it runs.
// An SDK error is printed as {"step": "error", "name": …, "status": …, "message": …}
// and the script exits with 1.
"use strict";

const OpenAI = require("openai");
const { z } = require("zod");
const { Agent, run, tool, setDefaultOpenAIClient, setTracingDisabled } = require("@openai/agents");

function emit(record) {
  process.stdout.write(JSON.stringify(record) + "\n");
}

function itemTypes(items) {
  return items.map((item) => item.type);
}

function describe(event) {
  if (event.type === "raw_model_stream_event") {
    const data = event.data;
    const raw = data.type === "model" ? data.event : null;
    return { type: event.type, data_type: data.type, raw_type: raw ? raw.type : null, delta: data.delta ?? null };
  }
  if (event.type === "run_item_stream_event") {
    return { type: event.type, name: event.name, item_type: event.item.type };
  }
  return { type: event.type, agent: event.agent.name };
}

async function main() {
  const [baseURL, model, toolPrompt, jsonPrompt] = process.argv.slice(2);
  setTracingDisabled(true);
  setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey: "dummy-key", maxRetries: 0 }));

  const getWeather = tool({
    name: "get_weather",
    description: "The weather in a city.",
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      emit({ step: "tool", city });
      return `sunny, 21 C in ${city}`;
    },
  });
  const agent = new Agent({
    name: "Weather",
    instructions: "Answer questions about the weather.",
    model,
    tools: [getWeather],
  });

  const result = await run(agent, toolPrompt);
  emit({ step: "run", final_output: result.finalOutput, items: itemTypes(result.newItems) });

  const stream = await run(agent, toolPrompt, { stream: true });
  for await (const event of stream) {
    emit({ step: "event", event: describe(event) });
  }
  await stream.completed;
  emit({ step: "streamed", final_output: stream.finalOutput, items: itemTypes(stream.newItems) });

  const reporter = new Agent({
    name: "Reporter",
    instructions: "Report the weather as JSON.",
    model,
    outputType: z.object({ city: z.string(), celsius: z.number() }),
  });
  const report = await run(reporter, jsonPrompt);
  emit({ step: "structured", final_output: report.finalOutput });
}

main().catch((error) => {
  emit({ step: "error", name: error.constructor.name, status: error.status ?? null, message: String(error.message) });
  process.exit(1);
});
