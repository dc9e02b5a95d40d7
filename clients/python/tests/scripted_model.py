"""A scripted chat model: no LLM exists on this machine, so each turn of the
"model" is a small function of the conversation so far. It is a real
LangChain ``BaseChatModel``, so LangGraph drives it like any other, and it
records every message list it was given, so tests can show what the model saw."""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

Turn = Callable[[List[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    turns: List[Turn]
    seen: List[List[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: List[BaseMessage], stop: Optional[List[str]] = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        index = len(self.seen)
        self.seen.append(list(messages))
        if index >= len(self.turns):
            raise AssertionError(f"the script has no turn {index + 1}")
        return ChatResult(generations=[ChatGeneration(message=self.turns[index](messages))])


def tool_call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])
