package benchutil

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// callgrindPID is the process ID of a redis-server run under valgrind's
// callgrind tool, from BENCH_CALLGRIND_PID, or "" when unset. With it,
// Warm zeroes the server's instruction counters and ReportTrips reports
// the instructions it ran since, per operation, as "redis-Ir/op": a
// count of the server's work that no other process on the machine moves,
// unlike every time-based column. Run the server as
//
//	valgrind --tool=callgrind redis-server --port 6391 --save '' --appendonly no
//
// and the benchmark with REDIS_ADDR=127.0.0.1:6391 and a fixed count
// (-benchtime 20000x): under callgrind the server runs about 50 times
// slower, so only the instruction count means anything.
func callgrindPID() string { return os.Getenv("BENCH_CALLGRIND_PID") }

// callgrindZero zeroes the counters of callgrind process pid.
func callgrindZero(pid string) error {
	return exec.Command("callgrind_control", "-z", pid).Run()
}

// callgrindIr returns the instructions callgrind process pid ran since
// its counters were last zeroed, summed over its threads.
func callgrindIr(pid string) (int64, error) {
	out, err := exec.Command("callgrind_control", "-e", "Ir", pid).Output()
	if err != nil {
		return 0, err
	}
	return sumThreadIr(string(out))
}

// sumThreadIr sums the "Th N count" lines of callgrind_control -e Ir.
func sumThreadIr(out string) (int64, error) {
	var total int64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "Th" {
			continue
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(f[2], ",", ""), 10, 64)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
