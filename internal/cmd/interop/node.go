package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// nodes runs the flows' Node functions: by default through one
// `node run.js --serve <client>` process per client, started on first
// use (Node and its client load once, not once per call); with spawn set,
// one `node run.js <client> <area> <fn> <params>` process per call, the
// runner's plain form. Calls are made one at a time.
type nodes struct {
	bin, runJS, url string
	spawn           bool
	servers         map[string]*server
}

// server is one running `node run.js --serve <client>`.
type server struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
}

// firstLine is an error's first line: the message, without Node's stack.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func (n *nodes) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, n.bin, append([]string{n.runJS}, args...)...)
	cmd.Env = append(os.Environ(), "REDIS_URL="+n.url)
	return cmd
}

// run runs fn of area with client and returns its result (JSON).
func (n *nodes) run(ctx context.Context, client, area, fn string, params []byte) ([]byte, error) {
	if n.spawn {
		cmd := n.command(ctx, client, area, fn, string(params))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%v: %s", err, firstLine(errb.String()))
		}
		return out.Bytes(), nil
	}
	s, err := n.server(client)
	if err != nil {
		return nil, err
	}
	req, err := json.Marshal(map[string]any{"area": area, "fn": fn, "params": json.RawMessage(params)})
	if err != nil {
		return nil, err
	}
	type answer struct {
		line []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		if _, err := s.in.Write(append(req, '\n')); err != nil {
			done <- answer{nil, err}
			return
		}
		line, err := s.out.ReadBytes('\n')
		done <- answer{line, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		n.stop(client) // its reply would answer the next call
		return nil, ctx.Err()
	}
	if a.err != nil {
		n.stop(client)
		return nil, fmt.Errorf("node --serve %s: %v: %s", client, a.err, firstLine(s.stderr.String()))
	}
	var rep struct {
		Result json.RawMessage `json:"result"`
		Error  *string         `json:"error"`
	}
	if err := json.Unmarshal(a.line, &rep); err != nil {
		return nil, fmt.Errorf("node --serve %s: reply %q: %w", client, a.line, err)
	}
	if rep.Error != nil {
		return nil, errors.New(firstLine(*rep.Error))
	}
	return rep.Result, nil
}

// server returns client's server, starting it if need be.
func (n *nodes) server(client string) (*server, error) {
	if s := n.servers[client]; s != nil {
		return s, nil
	}
	cmd := n.command(context.Background(), "--serve", client)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, in: in, out: bufio.NewReader(out), stderr: &bytes.Buffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if n.servers == nil {
		n.servers = map[string]*server{}
	}
	n.servers[client] = s
	return s, nil
}

// stop ends client's server, if one runs.
func (n *nodes) stop(client string) {
	s := n.servers[client]
	if s == nil {
		return
	}
	delete(n.servers, client)
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// close ends every server: stdin closes, and each exits once its client
// has quit.
func (n *nodes) close() {
	for client, s := range n.servers {
		_ = s.in.Close()
		_ = s.cmd.Wait()
		delete(n.servers, client)
	}
}
