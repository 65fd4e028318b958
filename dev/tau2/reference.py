"""tau2 airline tasks and their reference databases, with tau2's own code (bench/tau2/).

    python reference.py tools              {tool: true if it writes}, tau2's classification
    python reference.py tasks              the tasks with write actions, as JSON on stdout
    python reference.py check ID STATE     compares STATE's db (dev/tau2/airline_mcp.py) with the
                                           task's reference: its actions applied once to a fresh db,
                                           as tau2's evaluator does (evaluator_env.py); JSON on stdout

The comparison is tau2's: the hash of the db's model_dump (ToolKitBase.get_db_hash).
"""

import json
import os
import sys

os.environ.setdefault("LOGURU_LEVEL", "ERROR")

from tau2.domains.airline.data_model import FlightDB  # noqa: E402
from tau2.domains.airline.tools import AirlineTools  # noqa: E402
from tau2.domains.airline.utils import AIRLINE_DB_PATH, AIRLINE_TASK_SET_PATH  # noqa: E402
from tau2.environment.toolkit import ToolType  # noqa: E402
from tau2.utils import get_dict_hash  # noqa: E402


def all_tasks():
    with open(AIRLINE_TASK_SET_PATH) as f:
        return json.load(f)


def write_tasks():
    kinds = AirlineTools(FlightDB.load(str(AIRLINE_DB_PATH)))
    out = []
    for task in all_tasks():
        actions = (task.get("evaluation_criteria") or {}).get("actions") or []
        listed = [
            {"name": a["name"], "arguments": a["arguments"], "write": kinds.tool_type(a["name"]) == ToolType.WRITE}
            for a in actions
        ]
        if any(a["write"] for a in listed):
            out.append({"id": task["id"], "actions": listed})
    return out


def check(task_id, state_file):
    task = next(t for t in all_tasks() if t["id"] == task_id)
    gold = AirlineTools(FlightDB.load(str(AIRLINE_DB_PATH)))
    for a in task["evaluation_criteria"]["actions"]:
        try:
            gold.use_tool(a["name"], **a["arguments"])
        except Exception:  # as tau2's evaluator: a failing reference action is skipped
            pass
    with open(state_file) as f:
        state = json.load(f)
    got = FlightDB.model_validate(state["db"])
    ref_hash = gold.get_db_hash()
    got_hash = get_dict_hash(got.model_dump())
    return {"match": ref_hash == got_hash, "reference": ref_hash, "actual": got_hash}


if __name__ == "__main__":
    if sys.argv[1:2] == ["tools"]:
        kinds = AirlineTools(FlightDB.load(str(AIRLINE_DB_PATH)))
        print(json.dumps({name: kinds.tool_type(name) == ToolType.WRITE for name in sorted(kinds.tools)}))
    elif sys.argv[1:2] == ["tasks"]:
        print(json.dumps(write_tasks()))
    elif sys.argv[1:2] == ["check"] and len(sys.argv) == 4:
        print(json.dumps(check(sys.argv[2], sys.argv[3])))
    else:
        sys.exit(__doc__)
