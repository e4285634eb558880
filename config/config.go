// Package config holds Cardinal's install files. SchedulerConfiguration is
// the scheduler configuration they install, built into tools that decide
// as the scheduler does (kubectl cardinal), so that both read one file.
package config

import _ "embed"

// SchedulerConfiguration is config/scheduler-config.yaml.
//
//go:embed scheduler-config.yaml
var SchedulerConfiguration []byte
