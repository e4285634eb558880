// Package cli is kubectl cardinal: what Cardinal's scheduler sees, for
// people. It rebuilds the scheduler's state and profile from the cluster
// (pkg/inspect) and prints queues, gangs, and why a pod or gang waits.
package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"cardinal.dev/cardinal/config"
	"cardinal.dev/cardinal/pkg/compat"
	"cardinal.dev/cardinal/pkg/inspect"
)

// Options are the flags every command shares.
type Options struct {
	genericiooptions.IOStreams
	ConfigFlags *genericclioptions.ConfigFlags
	// SchedulerConfig is a scheduler configuration file; empty for the one
	// Cardinal ships (config/scheduler-config.yaml).
	SchedulerConfig string
	// Output is "", wide, json or yaml.
	Output string
	// Width wraps sentences for a terminal; 0 leaves them whole.
	Width int
}

// NewCommand returns the kubectl-cardinal command.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, ConfigFlags: genericclioptions.NewConfigFlags(true)}
	if f, ok := streams.Out.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			o.Width = w
		}
	}
	cmd := &cobra.Command{
		Use:   "kubectl cardinal",
		Short: "What Cardinal's scheduler sees: queues, gangs, and why a pod waits",
		Long: `kubectl cardinal reads the cluster through the API and runs Cardinal's own
scheduling checks on it, read-only, to show queue use per resource and card
model, gangs, and why a pod or gang waits or was evicted.`,
		SilenceUsage: true,
	}
	o.ConfigFlags.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&o.SchedulerConfig, "scheduler-config", "", "the scheduler's configuration file (default: the one Cardinal ships)")
	cmd.AddCommand(newQueues(o), newWhy(o), newGangs(o))
	return cmd
}

func addOutput(cmd *cobra.Command, o *Options) {
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: wide, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"wide", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
}

func (o *Options) checkOutput() error {
	switch o.Output {
	case "", "wide", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q is not supported: use wide, json or yaml", o.Output)
}

// load rebuilds the scheduler's view of the cluster.
func (o *Options) load(ctx context.Context) (*inspect.Cluster, error) {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	schedCfg := config.SchedulerConfiguration
	if o.SchedulerConfig != "" {
		if schedCfg, err = os.ReadFile(o.SchedulerConfig); err != nil {
			return nil, err
		}
	}
	// An API server older than Cardinal supports is refused with both
	// versions named (SPEC §6), not left to fail on an API it lacks.
	d, err := o.ConfigFlags.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	info, err := d.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the API server's version: %w", err)
	}
	server, err := compat.NewServer(info.GitVersion)
	if err != nil {
		return nil, err
	}
	if err := compat.CheckVersion(server, "kubectl cardinal"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, time.Minute, fmt.Errorf("the cluster did not answer within a minute"))
	defer cancel()
	return inspect.Load(ctx, cfg, schedCfg)
}

func (o *Options) namespace() (string, error) {
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

// printStructured prints v as json or yaml; false for other outputs.
func (o *Options) printStructured(v any) (bool, error) {
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintln(o.Out, string(b))
		return true, err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = o.Out.Write(b)
		return true, err
	}
	return false, nil
}

// wrap writes "label text" wrapped at o.Width, continuation lines indented
// under the text.
func (o *Options) wrap(w io.Writer, label, text string) {
	indent := strings.Repeat(" ", len(label))
	if o.Width <= len(label)+20 {
		fmt.Fprintf(w, "%s%s\n", label, text)
		return
	}
	line := label
	for i, word := range strings.Fields(text) {
		if i > 0 && len(line)+1+len(word) > o.Width {
			fmt.Fprintln(w, line)
			line = indent + word
			continue
		}
		if i > 0 {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(w, line)
}
