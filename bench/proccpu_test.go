package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// procCPUTicks is the CPU time (user + system, in clock ticks) a process
// has used so far, from /proc/PID/stat. It counts the threads that exited
// too, which summing the threads' schedstat would miss. The tick length
// (USER_HZ) cancels out of every ratio the benchmarks report.
func procCPUTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold blanks:
	// count fields from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')' in %q", pid, b)
	}
	f := bytes.Fields(b[i+1:])
	// After ')': state is field 3, so utime (14) and stime (15) are f[11]
	// and f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	var sum int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %v", pid, err)
		}
		sum += n
	}
	return sum, nil
}
