"""Any model's chat template: render prompts with it, derive its output format by
differential analysis, parse its output into OpenChatML messages, build grammars."""
