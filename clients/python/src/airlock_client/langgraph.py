"""The pattern as a LangGraph graph: agent → policy node → sandbox node or
denied node → back to the agent.

The policy node asks airlock's gate about every tool call the model made and
routes: allowed calls go to the sandbox node, which runs them through
``/v1/run`` (where the engine gates them again: the policy node routes, the
sandbox is the wall); refused calls go to the denied node, which answers the
model with the reason so it can change course.

An error talking to airlock (an ``AirlockError`` such as ``queue_full`` or
``bad_response``, or an httpx transport error) becomes an error tool message
for that one call, from either node: the graph goes on, the other calls of the
turn keep their answers, and nothing failed is reported as success.
"""

from __future__ import annotations

from typing import Annotated, Any, Dict, List, TypedDict

import httpx
from langchain_core.messages import AnyMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from .client import Airlock
from .model_text import clean, describe_denial, describe_run
from .types import AirlockError

TOOL_NAMES = ("run_shell", "run_python")


class AgentState(TypedDict, total=False):
    messages: Annotated[List[AnyMessage], add_messages]
    # The policy node's verdict on each tool call of the last model turn.
    verdicts: List[Dict[str, Any]]


def _not_run(e: Exception) -> Dict[str, Any]:
    """What the model and the artifact say about a call airlock could not answer."""
    if isinstance(e, AirlockError):
        return {"text": f"NOT RUN: airlock answered {e.code}: {clean(e.message)}",
                "artifact": {"error": e.code, "message": e.message}}
    # A transport error: whether a run started is unknown, so say so.
    return {"text": (f"NOT RUN or outcome unknown: could not talk to airlock ({type(e).__name__}: "
                     f"{clean(str(e))}). Do not assume it ran; check before retrying."),
            "artifact": {"error": "transport", "message": f"{type(e).__name__}: {e}"}}


def build_graph(client: Airlock, model: Any):
    """Compile the graph. ``model`` is any LangChain chat model (one that emits
    ``run_shell {command}`` / ``run_python {code}`` tool calls)."""

    def agent(state: AgentState) -> Dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def after_agent(state: AgentState) -> str:
        last = state["messages"][-1]
        return "policy" if getattr(last, "tool_calls", None) else END

    def policy(state: AgentState) -> Dict[str, Any]:
        verdicts = []
        for call in state["messages"][-1].tool_calls:
            args = call.get("args") or {}
            field = {"run_shell": "command", "run_python": "code"}.get(call["name"])
            if field is not None and isinstance(args.get(field), str):
                try:
                    if call["name"] == "run_shell":
                        check = client.check(args["command"])
                    else:
                        check = client.check_code(args["code"])
                except (AirlockError, httpx.HTTPError) as e:
                    # Not asked, so not allowed: the denied node tells the model.
                    verdicts.append({"call": call, "decision": "error", "reason": "", "error": _not_run(e)})
                    continue
                verdicts.append({"call": call, "decision": check.decision, "reason": check.reason})
            else:
                verdicts.append({"call": call, "decision": "deny",
                                 "reason": f"unknown tool or arguments: {call['name']}; use one of {TOOL_NAMES}"})
        return {"verdicts": verdicts}

    def after_policy(state: AgentState) -> List[str]:
        decisions = [v["decision"] for v in state["verdicts"]]
        routes = []
        if any(d == "allow" for d in decisions):
            routes.append("sandbox")
        if any(d != "allow" for d in decisions):
            routes.append("denied")
        return routes

    def sandbox(state: AgentState) -> Dict[str, Any]:
        messages = []
        for v in state["verdicts"]:
            if v["decision"] != "allow":
                continue
            call = v["call"]
            args = call["args"]
            try:
                if call["name"] == "run_shell":
                    result = client.run(args["command"], timeout_s=args.get("timeout_s"))
                else:
                    result = client.run_code(args["code"], timeout_s=args.get("timeout_s"))
            except (AirlockError, httpx.HTTPError) as e:
                # The model hears about it (queue full, sandbox refused to
                # start, connection lost...) instead of the whole graph failing,
                # and the calls before this one keep their answers (a retry of
                # the node would run them again).
                err = _not_run(e)
                messages.append(ToolMessage(content=err["text"], tool_call_id=call["id"], name=call["name"],
                                            status="error", artifact=err["artifact"]))
                continue
            messages.append(ToolMessage(content=describe_run(result), tool_call_id=call["id"], name=call["name"],
                                        status="success" if result.ok else "error", artifact=result.raw))
        return {"messages": messages}

    def denied(state: AgentState) -> Dict[str, Any]:
        messages = []
        for v in state["verdicts"]:
            if v["decision"] == "allow":
                continue
            if v["decision"] == "error":
                content, artifact = v["error"]["text"], v["error"]["artifact"]
            else:
                content = describe_denial(v["decision"], v["reason"])
                artifact = {"decision": v["decision"], "reason": v["reason"]}
            messages.append(ToolMessage(content=content, tool_call_id=v["call"]["id"], name=v["call"]["name"],
                                        status="error", artifact=artifact))
        return {"messages": messages}

    graph = StateGraph(AgentState)
    graph.add_node("agent", agent)
    graph.add_node("policy", policy)
    graph.add_node("sandbox", sandbox)
    graph.add_node("denied", denied)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", after_agent, ["policy", END])
    graph.add_conditional_edges("policy", after_policy, ["sandbox", "denied"])
    graph.add_edge("sandbox", "agent")
    graph.add_edge("denied", "agent")
    return graph.compile()
