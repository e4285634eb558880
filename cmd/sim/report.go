package main

import (
	"flag"
	"fmt"
	"path/filepath"

	"cardinal.dev/cardinal/pkg/sim/record"
	"cardinal.dev/cardinal/pkg/sim/report"
)

func reportCmd(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("report needs one directory, a run's --out")
	}
	dir := fs.Arg(0)
	run, err := record.Read(dir)
	if err != nil {
		return err
	}
	if err := report.Render(run, dir); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", filepath.Join(dir, "report.md"))
	return nil
}
