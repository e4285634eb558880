// Command kubectl-cardinal is the kubectl plugin `kubectl cardinal`: queue
// use, gangs, and why a pod or gang waits, from Cardinal's own scheduling
// code run read-only on what the API shows (pkg/cli).
package main

import (
	"flag"
	"io"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"cardinal.dev/cardinal/pkg/cli"
)

func main() {
	// The scheduler's plugins log as they are built; a command's output is
	// its answer. Errors still reach stderr.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "ERROR")
	klog.SetOutput(io.Discard)
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
