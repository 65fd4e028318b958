// Command porcupine-check is the fault matrix's independent checker: it reads the histories the
// matrix wrote (test/matrix/histories.ts) and checks them with Porcupine against the model in
// model.go. Exit 0: every history has a legal order; 1: a violation (one line each, plus an HTML
// visualization per cell); 2: the histories could not be read.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

func main() {
	viz := flag.String("viz", "", "directory for an HTML visualization of each failing cell (default: next to the histories)")
	timeout := flag.Duration("timeout", 60*time.Second, "give up on a cell after this long (reported as unknown)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: porcupine-check [-viz DIR] [-timeout D] HISTORY_DIR_OR_FILE...")
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	start := time.Now()
	var all []History
	for _, p := range flag.Args() {
		hs, err := readHistories(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "porcupine-check:", err)
			os.Exit(2)
		}
		all = append(all, hs...)
	}
	if len(all) == 0 {
		fmt.Fprintln(os.Stderr, "porcupine-check: no histories (*.json) in", strings.Join(flag.Args(), " "))
		os.Exit(2)
	}
	ops, ids, bad := 0, 0, 0
	for _, h := range all {
		r := checkHistory(h, *timeout)
		ops += len(h.Ops)
		ids += r.ids
		if r.result == porcupine.Ok {
			continue
		}
		bad++
		dir := *viz
		if dir == "" {
			dir = filepath.Dir(h.Path)
		}
		html := filepath.Join(dir, fileName(h.Cell)+".html")
		err := os.MkdirAll(dir, 0o755)
		if err == nil {
			err = porcupine.VisualizePath(model, r.info, html)
		}
		if err != nil {
			html = "(no visualization: " + err.Error() + ")"
		}
		fmt.Printf("VIOLATION %s: %s [%s] visualization: %s\n", h.Cell, r.why, h.Path, html)
	}
	ms := time.Since(start).Milliseconds()
	if bad > 0 {
		fmt.Printf("porcupine: %d of %d cells violate the model (%d operations, %d execution IDs, %d ms)\n", bad, len(all), ops, ids, ms)
		os.Exit(1)
	}
	fmt.Printf("porcupine: %d cells, %d operations, %d execution IDs: every history has a legal order (%d ms)\n", len(all), ops, ids, ms)
}

type cellResult struct {
	result porcupine.CheckResult
	info   porcupine.LinearizationInfo
	why    string
	ids    int
}

func checkHistory(h History, timeout time.Duration) cellResult {
	ops := operations(h)
	parts := model.Partition(ops)
	res, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	r := cellResult{result: res, info: info, ids: len(parts)}
	switch res {
	case porcupine.Unknown:
		r.why = fmt.Sprintf("no answer within %s", timeout)
	case porcupine.Illegal:
		var whys []string
		for _, p := range parts {
			if w := explain(p, timeout); w != "" {
				whys = append(whys, w)
			}
		}
		r.why = strings.Join(whys, "; ")
	}
	return r
}

// explain names the first illegal step of a partition with no legal order: after the longest
// legal prefix Porcupine found, the earliest operation left that cannot follow it.
func explain(part []porcupine.Operation, timeout time.Duration) string {
	res, info := porcupine.CheckOperationsVerbose(model, part, timeout)
	if res != porcupine.Illegal {
		return ""
	}
	id := part[0].Input.(*Op).ExecutionID
	var longest []porcupine.Operation
	for _, partials := range info.PartialLinearizationsOperations() {
		for _, l := range partials {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	s := state{}
	done := map[*Op]bool{}
	for _, o := range longest {
		_, s, _ = step(s, o.Input.(*Op))
		done[o.Input.(*Op)] = true
	}
	var next *porcupine.Operation
	for i := range part {
		o := &part[i]
		if done[o.Input.(*Op)] {
			continue
		}
		if ok, _, _ := step(s, o.Input.(*Op)); !ok && (next == nil || o.Call < next.Call) {
			next = o
		}
	}
	if next == nil {
		return fmt.Sprintf("%s: no legal order", id)
	}
	op := next.Input.(*Op)
	_, _, why := step(s, op)
	return fmt.Sprintf("%s: %s (%s at +%.3f s, %s)", id, why, describe(op), float64(op.Call)/1e9, op.Source)
}

var unsafe = regexp.MustCompile(`[^a-z0-9]+`)

func fileName(cell string) string {
	return "porcupine-" + strings.Trim(unsafe.ReplaceAllString(strings.ToLower(cell), "-"), "-")
}
