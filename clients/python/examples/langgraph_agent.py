#!/usr/bin/env python3
"""The pattern, end to end: agent → policy node → sandbox node or denied node →
back to the agent, against a running `airlock serve`.

No LLM is needed to watch it work: by default the "model" is a script that
reads sales.csv, falls for the instruction planted in it, is denied, and then
does the real analysis in the sandbox. Pass your own LangChain chat model to
`build_graph` (one that emits `run_shell`/`run_python` tool calls) for the real
thing.

    cd clients/python/examples                        # sales.csv is here
    airlock serve &                                   # built-in default policy: this folder is the workspace
    python3 langgraph_agent.py [--socket PATH | --url URL --token T]

(tests/test_langgraph.py runs exactly this.)
"""

import argparse
import re

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from airlock_client import Airlock
from airlock_client.langgraph import build_graph


class ReplayModel(BaseChatModel):
    """Four scripted turns standing in for a model."""

    @property
    def _llm_type(self) -> str:
        return "replay"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        tools = [m for m in messages if isinstance(m, ToolMessage)]
        call = lambda name, cid, **a: AIMessage(content="", tool_calls=[{"name": name, "args": a, "id": cid, "type": "tool_call"}])
        if not tools:
            msg = call("run_shell", "read", command="cat sales.csv")
        elif len(tools) == 1:
            planted = re.search(r"run: ([^\"\n]+)", tools[-1].content)
            msg = call("run_shell", "planted", command=planted.group(1) if planted else "true")
        elif len(tools) == 2:
            msg = call("run_python", "analysis", code=(
                "import csv\nrows = [r for r in csv.DictReader(open('sales.csv')) if r['qty'].isdigit()]\n"
                "print('total_qty=%d' % sum(int(r['qty']) for r in rows))"))
        else:
            found = re.search(r"total_qty=(\d+)", tools[-1].content)
            msg = AIMessage(content=f"sales.csv lists {found.group(1)} items." if found else tools[-1].content)
        return ChatResult(generations=[ChatGeneration(message=msg)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket")
    ap.add_argument("--url")
    ap.add_argument("--token")
    args = ap.parse_args()
    client = Airlock(socket=args.socket, base_url=args.url, token=args.token)
    graph = build_graph(client, ReplayModel())
    state = graph.invoke({"messages": [HumanMessage(content="How many items does sales.csv list?")]})
    for m in state["messages"]:
        print(f"--- {type(m).__name__}{' (' + m.tool_call_id + ')' if isinstance(m, ToolMessage) else ''}")
        print(m.content or m.tool_calls)


if __name__ == "__main__":
    main()
