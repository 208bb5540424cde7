"""Random-weight models built offline, in seconds, for tests and demos.

``tiny_random`` builds ``tiny-random``, a gpt-oss with the real o200k_harmony tokenizer
whose weights are noise shaped like Harmony; ``tiny_chat`` builds ``tiny-chat-<family>``
models around any chat template (Qwen3, Llama, … architectures). Neither knows anything;
they make the server's paths run end to end without downloading weights. Importing this
package loads no torch.
"""
