package builder

// Because is a refusal of the given words, for tests that need a pod or
// gang refused for some reason and look only at what carries it.
type Because string

func (b Because) String() string { return string(b) }
func (b Because) Error() string  { return string(b) }

// Fix is empty: no fix is known for a made-up reason.
func (Because) Fix() string { return "" }
