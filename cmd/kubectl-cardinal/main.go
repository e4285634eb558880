// Command kubectl-cardinal is the kubectl plugin `kubectl cardinal`: queue
// use, gangs, and why a pod or gang waits, from Cardinal's own scheduling
// code run read-only on what the API shows (pkg/cli).
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"cardinal.dev/cardinal/pkg/cli"
)

func main() {
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
