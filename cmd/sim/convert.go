package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"

	"cardinal.dev/cardinal/pkg/sim/convert"
)

// convertCmd writes a trace converted from a public cluster trace to
// standard output; what it chose for what the source lacks is in the
// trace's about, and said on standard error.
func convertCmd(args []string) error {
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	from := fs.String("from", "", "the source's format: openb2023 (Alibaba's 2023 GPU cluster trace)")
	o := convert.DefaultOptions()
	o.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: cardinal-sim convert --from openb2023 NODES.csv PODS.csv [flags] > trace.yaml")
		fs.PrintDefaults()
	}
	// Flags may come before or after the two files, as users write them.
	flags, files := splitArgs(fs, args)
	if err := fs.Parse(flags); err != nil {
		return err
	}
	files = append(files, fs.Args()...)
	if *from != "openb2023" {
		return fmt.Errorf("convert needs --from openb2023 (the one source format it reads), got %q", *from)
	}
	if len(files) != 2 {
		return fmt.Errorf("convert needs two files, NODES.csv and PODS.csv, got %d", len(files))
	}
	if err := o.Validate(); err != nil {
		return err
	}
	t, err := convert.ConvertFiles(files[0], files[1], o)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, strings.TrimSpace(t.About))
	w := bufio.NewWriter(os.Stdout)
	if err := convert.Write(w, t); err != nil {
		return err
	}
	return w.Flush()
}

// splitArgs separates positional arguments from flags, wherever they are:
// a flag's value in its own argument stays with the flag (boolean flags
// take theirs as --flag=value).
func splitArgs(fs *flag.FlagSet, args []string) (flags, positional []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(positional, args[i+1:]...)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			flags = append(flags, a)
			if !strings.Contains(a, "=") && !isBool(fs, a) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		default:
			positional = append(positional, a)
		}
	}
	return flags, positional
}

func isBool(fs *flag.FlagSet, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	if name == "h" || name == "help" {
		return true
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
