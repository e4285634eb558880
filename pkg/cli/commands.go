package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"cardinal.dev/cardinal/pkg/inspect"
)

func newQueues(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "Each queue's guarantee, deserved share, use, capability, pending demand and borrowing, per resource and card model",
		Example: `  kubectl cardinal queues
  kubectl cardinal queues -o wide
  kubectl cardinal queues -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.checkOutput(); err != nil {
				return err
			}
			c, err := o.load(cmd.Context())
			if err != nil {
				return err
			}
			rows := inspect.Queues(c.State)
			if done, err := o.printStructured(rows); done {
				return err
			}
			return printTable(o, queueTable(rows))
		},
	}
	addOutput(cmd, o)
	return cmd
}

func queueTable(rows []inspect.QueueRow) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Queue", Type: "string"},
		{Name: "Resource", Type: "string", Description: "a resource, or card:MODEL for a card model (whole cards)"},
		{Name: "Guarantee", Type: "string"},
		{Name: "Deserved", Type: "string"},
		{Name: "Allocated", Type: "string"},
		{Name: "Capability", Type: "string"},
		{Name: "Pending", Type: "string"},
		{Name: "Borrowed", Type: "string", Description: "allocated beyond deserved: what queues below their share may reclaim"},
		{Name: "Elastic", Type: "string", Priority: 1},
		{Name: "Non-preemptible", Type: "string", Priority: 1},
		{Name: "Weight", Type: "integer", Priority: 1},
		{Name: "Reclaimable", Type: "boolean", Priority: 1},
		{Name: "Namespaces", Type: "string", Priority: 1, Description: "the namespaces whose pods may use the queue (its namespaceSelector); * for all"},
	}}
	for _, r := range rows {
		res := r.Resource
		if r.Card {
			res = "card:" + res
		}
		capability := r.Capability
		if capability == "" {
			capability = "-"
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{
			r.Queue, res, r.Guarantee, r.Deserved, r.Allocated, capability, r.Pending, r.Borrowed, r.Elastic, r.NonPreemptible, r.Weight, r.Reclaimable, r.Namespaces,
		}})
	}
	return t
}

func newGangs(o *Options) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "gangs",
		Short: "Each PodGroup's min, placed and elastic pods, phase and why it waits",
		Example: `  kubectl cardinal gangs -n team-a
  kubectl cardinal gangs -A -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.checkOutput(); err != nil {
				return err
			}
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			if all {
				ns = ""
			}
			c, err := o.load(cmd.Context())
			if err != nil {
				return err
			}
			rows, err := c.Gangs(cmd.Context(), ns)
			if err != nil {
				return err
			}
			if done, err := o.printStructured(rows); done {
				return err
			}
			return printTable(o, gangTable(rows, all))
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list gangs in every namespace")
	addOutput(cmd, o)
	return cmd
}

func gangTable(rows []inspect.GangRow, all bool) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string"},
		{Name: "Queue", Type: "string"},
		{Name: "Min", Type: "integer"},
		{Name: "Placed", Type: "integer"},
		{Name: "Elastic", Type: "integer"},
		{Name: "Pods", Type: "integer", Priority: 1},
		{Name: "Phase", Type: "string"},
		{Name: "Waiting", Type: "string", Priority: 1},
	}}
	if all {
		t.ColumnDefinitions = append([]metav1.TableColumnDefinition{{Name: "Namespace", Type: "string"}}, t.ColumnDefinitions...)
	}
	for _, r := range rows {
		cells := []any{r.Name, r.Queue, r.Min, r.Placed, r.Elastic, r.Pods, r.Phase, r.Waiting}
		if all {
			cells = append([]any{r.Namespace}, cells...)
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
	}
	return t
}

func printTable(o *Options, t *metav1.Table) error {
	if len(t.Rows) == 0 {
		_, err := fmt.Fprintln(o.ErrOut, "No resources found.")
		return err
	}
	p := printers.NewTablePrinter(printers.PrintOptions{Wide: o.Output == "wide"})
	return p.PrintObj(t, o.Out)
}

var _ runtime.Object = &metav1.Table{}

func newWhy(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "why (POD | pod/NAME | podgroup/NAME)",
		Short: "Why a pod or gang waits or was evicted, and what would let it run",
		Long: `why runs Cardinal's own admission, PreFilter and Filter checks, read-only, on
a pod that waits and says in words what refuses it, with the numbers, and
what would let it run. For a gang (podgroup/NAME) it says what its
PodGroup's cardinal.dev/waiting-reason annotation says. An evicted pod
says who evicted it and why.`,
		Example: `  kubectl cardinal why train-0 -n team-a
  kubectl cardinal why podgroup/train -n team-a -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.checkOutput(); err != nil {
				return err
			}
			kind, name := "pod", args[0]
			if k, n, ok := strings.Cut(args[0], "/"); ok {
				kind, name = strings.ToLower(k), n
			}
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			c, err := o.load(cmd.Context())
			if err != nil {
				return err
			}
			var a inspect.Answer
			switch kind {
			case "pod", "pods", "po":
				a, err = c.WhyPod(cmd.Context(), ns, name)
			case "podgroup", "podgroups", "pg", "podgroups.scheduling.x-k8s.io":
				a, err = c.WhyPodGroup(cmd.Context(), ns, name)
			default:
				return fmt.Errorf("%s: why answers for pod/NAME or podgroup/NAME", args[0])
			}
			if err != nil {
				return err
			}
			if done, err := o.printStructured(a); done {
				return err
			}
			fmt.Fprintf(o.Out, "%s: %s\n", a.Object, a.State)
			o.wrap(o.Out, "Why:    ", a.Why)
			if a.Fix != "" {
				o.wrap(o.Out, "To run: ", a.Fix)
			}
			if a.Since != nil {
				fmt.Fprintf(o.Out, "Since:  %s\n", a.Since.UTC().Format("2006-01-02T15:04:05Z"))
			}
			return nil
		},
	}
	addOutput(cmd, o)
	return cmd
}
