package controlplane

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat times:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// CPUSeconds is the CPU time, user and system, the process has used so far,
// read from /proc; 0 where /proc is not there. A benchmark that divides it
// by the work done gets a cost that a busy machine's scheduling noise does
// not move as much as it moves wall-clock rates.
func (p *Process) CPUSeconds() float64 {
	if p == nil || p.cmd.Process == nil {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// count fields from after it. utime and stime are fields 14 and 15.
	s := string(data)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return (utime + stime) / clockTicks
}

// CPUSeconds is the CPU time etcd and kube-apiserver (and the controller
// manager, when started) have used so far.
func (cp *ControlPlane) CPUSeconds() float64 {
	return cp.etcd.CPUSeconds() + cp.apiserver.CPUSeconds() + cp.controllers.CPUSeconds()
}
