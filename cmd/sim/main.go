// Command cardinal-sim replays a trace of GPU work against Cardinal, the
// default kube-scheduler profile and scheduler-plugins on local control
// planes with simulated nodes, and reports what each did with it (SPEC §8):
//
//	cardinal-sim run --trace T --schedulers cardinal,default,scheduler-plugins --compress K --out DIR [--expect E]
//	cardinal-sim convert --from openb2023 NODES.csv PODS.csv [--queues N --gangs F --seed S ...] > trace.yaml
//	cardinal-sim report DIR
package main

import (
	"errors"
	"fmt"
	"os"
)

const usage = `cardinal-sim replays a trace of GPU work against schedulers and reports what each did with it.

Commands:
  run      replay a trace: cardinal-sim run --trace T --schedulers cardinal,default,scheduler-plugins --compress K --out DIR [--expect E]
  convert  write a trace from a public cluster trace: cardinal-sim convert --from openb2023 NODES.csv PODS.csv [flags] > trace.yaml
  report   draw a run's report again from its files: cardinal-sim report DIR

Run "cardinal-sim COMMAND -h" for a command's flags.
`

// errExpectations is a run whose numbers fell outside an expected range.
var errExpectations = errors.New("numbers outside their expected ranges")

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "run":
		err = runCmd(args)
	case "convert":
		err = convertCmd(args)
	case "report":
		err = reportCmd(args)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "cardinal-sim: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cardinal-sim:", err)
		os.Exit(1)
	}
}
