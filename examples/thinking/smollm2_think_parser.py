"""A reasoning parser for the embedded SmolLM2 judge, which has no thinking of its own: two of its unused
special tokens, <issue_start> (id 8) and <issue_closed> (id 10), stand in for <think> and </think>.

With smollm2_think.jinja (a chat template with Qwen3's `enable_thinking` switch) it lets every thinking
path of the service run on the embedded model: in-process and behind `vllm.entrypoints.openai.api_server`
(`--reasoning-parser-plugin` this file, `--reasoning-parser issue_think`). The 135M model's thinking is
noise; this profile exercises the machinery and measures its cost (docs/thinking.md).
"""

from vllm.reasoning import ReasoningParserManager
from vllm.reasoning.basic_parsers import BaseThinkingReasoningParser


@ReasoningParserManager.register_module("issue_think")
class IssueThinkParser(BaseThinkingReasoningParser):
    @property
    def start_token(self) -> str:
        return "<issue_start>"

    @property
    def end_token(self) -> str:
        return "<issue_closed>"
