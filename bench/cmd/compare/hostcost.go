package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// The host's price list. Ratios move from host to host because the peers
// and we spend the server's CPU on different things: a peer sends one
// round trip per operation, whose price is mostly the kernel's network
// work (system calls, which CPU-vulnerability mitigations make several
// times dearer on some hosts), while an auto-pipelined script call shares
// its round trip and pays instead for the script (user-space work: the
// EVALSHA, its keys and arguments, the Lua). So each run also prices the
// three on its standalone server, with redis-benchmark at 16
// connections over satKeys keys, and the report prints them under the
// table's heading: a host where a round trip is cheap favours the peers'
// one command per trip, one where it is dear favours our shared trips.
var hostProbes = []struct {
	name     string
	pipeline int
	n        int
	command  []string // "SHA" stands for satScript's SHA1
}{
	{"host/incr/P=1", 1, 30000, []string{"incr", "bench-host:__rand_int__"}},
	{"host/incr/P=16", 16, 200000, []string{"incr", "bench-host:__rand_int__"}},
	{"host/evalsha/P=16", 16, 200000, []string{"evalsha", "SHA", "1", "bench-host:__rand_int__"}},
}

// hostCosts runs hostProbes on addr and adds their results to res.
func hostCosts(ctx context.Context, bin, addr string, res map[string]result) error {
	sha := strings.TrimSpace(info(addr, "script", "load", satScript))
	if len(sha) != 40 {
		return fmt.Errorf("SCRIPT LOAD on %s: %q", addr, sha)
	}
	for _, p := range hostProbes {
		cmd := append([]string(nil), p.command...)
		for i, a := range cmd {
			if a == "SHA" {
				cmd[i] = sha
			}
		}
		r, err := rbench(ctx, bin, addr, 16, p.pipeline, p.n, cmd...)
		if err != nil {
			return err
		}
		res[p.name] = r
	}
	return nil
}

// writeHostCosts prints the medians of b's host probes, if they ran: the
// server's CPU for a round trip (what INCR one per trip costs beyond INCR
// sixteen per trip, per trip), a plain command, and a call of satScript
// (INCR and PEXPIRE of one key), each with its share of a 16-call trip
// taken out.
func (b *backend) writeHostCosts(w io.Writer) {
	one, ok1 := b.alone("host/incr/P=1")
	pipe, ok2 := b.alone("host/incr/P=16")
	script, ok3 := b.alone("host/evalsha/P=16")
	if !ok1 || !ok2 || !ok3 {
		return
	}
	trip := (one["redis-us/op"] - pipe["redis-us/op"]) * 16 / 15
	command := pipe["redis-us/op"] - trip/16
	call := script["redis-us/op"] - trip/16
	fmt.Fprintf(w, "This host's prices (redis-benchmark on this server, 16 connections, Redis CPU, medians): a round trip %s µs, a plain command (INCR) %s µs, an EVALSHA of INCR + PEXPIRE %s µs, of which %s µs over its two commands. A peer that sends one round trip per operation pays the first; a shared, scripted call pays a share of it and the last.\n\n",
		num(trip), num(command), num(call), num(call-2*command))
}
