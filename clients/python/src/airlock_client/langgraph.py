"""The pattern as a LangGraph graph: agent → policy node → sandbox node or
denied node → back to the agent.

The policy node asks airlock's gate about every tool call the model made and
routes: allowed calls go to the sandbox node, which runs them through
``/v1/run`` (where the engine gates them again: the policy node routes, the
sandbox is the wall); refused calls go to the denied node, which answers the
model with the reason so it can change course.
"""

from __future__ import annotations

from typing import Annotated, Any, Dict, List, TypedDict

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
            if call["name"] == "run_shell" and isinstance(args.get("command"), str):
                check = client.check(args["command"])
                verdicts.append({"call": call, "decision": check.decision, "reason": check.reason})
            elif call["name"] == "run_python" and isinstance(args.get("code"), str):
                check = client.check_code(args["code"])
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
            except AirlockError as e:
                # The model hears about it (queue full, sandbox refused to
                # start...) instead of the whole graph failing.
                messages.append(ToolMessage(content=f"NOT RUN: airlock answered {e.code}: {clean(e.message)}",
                                            tool_call_id=call["id"], name=call["name"], status="error",
                                            artifact={"error": e.code, "message": e.message}))
                continue
            messages.append(ToolMessage(content=describe_run(result), tool_call_id=call["id"], name=call["name"],
                                        status="success" if result.ok else "error", artifact=result.raw))
        return {"messages": messages}

    def denied(state: AgentState) -> Dict[str, Any]:
        messages = [
            ToolMessage(content=describe_denial(v["decision"], v["reason"]), tool_call_id=v["call"]["id"],
                        name=v["call"]["name"], status="error",
                        artifact={"decision": v["decision"], "reason": v["reason"]})
            for v in state["verdicts"] if v["decision"] != "allow"
        ]
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
