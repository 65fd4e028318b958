package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The model: per execution ID, what has happened to the call so far. Porcupine looks for an order
// of the operations that agrees with their times and in which every step is legal; there is none
// when one approval led to two effects, when success was reported before any effect existed, or
// when anything reached the external system without an approval.
type state struct {
	approved    bool
	rejected    bool
	invocations int
	effects     int
	// A person decided "succeeded" or "failed": the call is settled, nothing more applies to it.
	settled bool
}

// step is the sequential specification; the reason says which promise an illegal step breaks.
func step(s state, op *Op) (bool, state, string) {
	switch op.Kind {
	case "approve":
		// An approval counts once applied (or applied in a run whose audit is gone) and bound to
		// this execution ID and the digest of the arguments that ran; others change nothing.
		if !op.Bound || op.Outcome == "ignored" {
			return true, s, ""
		}
		if s.rejected {
			return false, s, "approved after it was rejected"
		}
		s.approved = true
	case "reject":
		if op.Outcome != "applied" {
			return true, s, ""
		}
		if s.approved {
			return false, s, "rejected after it was approved"
		}
		s.rejected = true
	case "decide":
		if op.Outcome == "ignored" {
			return true, s, ""
		}
		if op.NeedsApproval && !s.approved {
			return false, s, "a recovery decision applied to a call never approved"
		}
		if s.settled {
			return false, s, "a second recovery decision applied after a person settled the call"
		}
		if op.Decision == "succeeded" && s.effects == 0 {
			return false, s, "success decided before the effect existed"
		}
		s.settled = op.Decision == "succeeded" || op.Decision == "failed"
	case "invoke":
		if op.NeedsApproval && !s.approved {
			return false, s, "the tool's activity ran without an approval"
		}
		if s.settled {
			return false, s, "the tool's activity ran after a person settled the call"
		}
		// Recovery policy: only a person (or reconcile) starts a protected call again, as a new run.
		if op.Protected && op.Attempt > 1 {
			return false, s, "a protected call was retried by Temporal (attempt > 1 of one run)"
		}
		s.invocations++
	case "request", "effect":
		if op.Foreign {
			return true, s, ""
		}
		what := map[string]string{"request": "a request reached", "effect": "an effect landed in"}[op.Kind]
		if op.NeedsApproval && !s.approved {
			return false, s, what + " the external system without an approval"
		}
		if s.invocations == 0 {
			return false, s, what + " the external system before any run of the call (clock or attribution error)"
		}
		if op.Kind == "effect" {
			if s.effects >= 1 {
				return false, s, "a second effect for one approved execution ID"
			}
			s.effects++
		}
	case "report":
		if s.effects == 0 {
			return false, s, fmt.Sprintf("success reported (%s) before its effect", op.Via)
		}
	case "lookup":
		// What reconcile() found is a read: its "applied" is checked as a report.
	}
	return true, s, ""
}

var model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byID := map[string][]porcupine.Operation{}
		var ids []string
		for _, o := range history {
			id := o.Input.(*Op).ExecutionID
			if _, ok := byID[id]; !ok {
				ids = append(ids, id)
			}
			byID[id] = append(byID[id], o)
		}
		sort.Strings(ids)
		out := make([][]porcupine.Operation, 0, len(ids))
		for _, id := range ids {
			out = append(out, byID[id])
		}
		return out
	},
	Init: func() interface{} { return state{} },
	Step: func(s, input, _ interface{}) (bool, interface{}) {
		ok, next, _ := step(s.(state), input.(*Op))
		return ok, next
	},
	DescribeOperation: func(input, _ interface{}) string { return describe(input.(*Op)) },
	DescribeState: func(s interface{}) string {
		st := s.(state)
		return fmt.Sprintf("approved=%v rejected=%v runs=%d effects=%d settled=%v", st.approved, st.rejected, st.invocations, st.effects, st.settled)
	},
}

func describe(op *Op) string {
	d := op.Kind
	switch op.Kind {
	case "approve", "reject", "decide":
		d = strings.Join(strings.Fields(fmt.Sprintf("%s %s by %s → %s", op.Kind, op.Decision, op.By, op.Outcome)), " ")
		if op.Kind == "approve" && !op.Bound {
			d += " (not bound)"
		}
	case "invoke":
		d = fmt.Sprintf("invoke %s attempt %d → %s", op.ActivityID, op.Attempt, op.Outcome)
	case "request", "lookup":
		d = fmt.Sprintf("%s → %s", op.Kind, op.Outcome)
	case "report":
		d = "report success via " + op.Via
	}
	if op.Foreign {
		d += " (foreign)"
	}
	return d
}

// Clients, for the visualization's rows: people, Temporal, the external system.
func clientOf(op *Op) int {
	switch op.Kind {
	case "approve", "reject", "decide":
		return 0
	case "request", "effect":
		return 2
	}
	return 1
}

func operations(h History) []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, len(h.Ops))
	for i := range h.Ops {
		op := &h.Ops[i]
		ops = append(ops, porcupine.Operation{ClientId: clientOf(op), Input: op, Call: op.Call, Return: op.Return})
	}
	return ops
}
