package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/queue"
)

// The seed's cron jobs and their intervals.
const (
	unreadReminder = "unread-reminder" // every 2 hours
	cleanupTokens  = "cleanup-tokens"  // every 24 hours
)

var errNoJob = errors.New("no such job")

// scheduler is one app instance's cron: it tries each job, and the
// interval guard (cron:last-run:{job_name}, claimed in one script by
// server time) lets exactly one instance run it per interval. A run
// holds the lease lock:cron:{job_name} while it works, so a slow run
// never overlaps the next.
type scheduler struct {
	a    *app
	name string
	jobs map[string]*lock.Interval
	fns  map[string]func(context.Context) (string, error)
}

func newScheduler(a *app, name string) (*scheduler, error) {
	locks, err := lock.New(a.rdb, lock.WithNamespace(a.ns), lock.WithOwner(name))
	if err != nil {
		return nil, err
	}
	s := &scheduler{a: a, name: name, jobs: map[string]*lock.Interval{}, fns: map[string]func(context.Context) (string, error){
		unreadReminder: a.remindUnread,
		cleanupTokens:  a.cleanUpTokens,
	}}
	for job, every := range map[string]time.Duration{unreadReminder: 2 * time.Hour, cleanupTokens: 24 * time.Hour} {
		g, err := locks.Interval(job, every, time.Minute)
		if err != nil {
			return nil, err
		}
		s.jobs[job] = g
	}
	return s, nil
}

// jobReport is the outcome of one try of a job.
type jobReport struct {
	Instance string     `json:"instance"`
	Job      string     `json:"job"`
	Ran      bool       `json:"ran"`
	Result   string     `json:"result,omitempty"`
	Previous *time.Time `json:"previous_run,omitempty"`
	Next     *time.Time `json:"next_run,omitempty"` // when not run: the earliest next claim
}

// try runs job if it is due, as one claim: no other instance can run it
// in the same interval, whatever the clocks say.
func (s *scheduler) try(ctx context.Context, job string) (jobReport, error) {
	g, ok := s.jobs[job]
	if !ok {
		return jobReport{}, fmt.Errorf("%w: %q", errNoJob, job)
	}
	rep := jobReport{Instance: s.name, Job: job}
	r, err := g.Claim(ctx)
	if err != nil {
		return rep, err
	}
	if !r.Previous.IsZero() {
		t := r.Previous.UTC()
		rep.Previous = &t
	}
	if !r.Claimed {
		t := r.Next.UTC()
		rep.Next = &t
		return rep, nil
	}
	defer func() {
		if err := r.Lease.Release(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(s.a.out, "%s: %s: release: %v\n", s.name, job, err)
		}
	}()
	// The job's context ends if the lease is lost.
	jctx, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(r.Lease.Context(), cancel)()
	defer cancel()
	rep.Ran = true
	rep.Result, err = s.fns[job](jctx)
	return rep, err
}

// startSchedulers has every instance try both jobs every interval until
// the app closes.
func (a *app) startSchedulers(every time.Duration) {
	for _, s := range a.instances {
		a.bg.Add(1)
		go func() {
			defer a.bg.Done()
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-a.ctx.Done():
					return
				case <-t.C:
				}
				for _, job := range []string{unreadReminder, cleanupTokens} {
					rep, err := s.try(a.ctx, job)
					switch {
					case err != nil && a.ctx.Err() == nil:
						fmt.Fprintf(a.out, "%s: %s: %v\n", s.name, job, err)
					case rep.Ran:
						fmt.Fprintf(a.out, "%s ran %s: %s\n", s.name, job, rep.Result)
					}
				}
			}
		}()
	}
}

// remindUnread is the unread-reminder job: every user with unread
// messages who is offline (one pipelined check for up to
// maxOnlineBatch users) gets one reminder push.
// maxOnlineBatch is the most users one Tracker.Online call takes.
const maxOnlineBatch = 10000

func (a *app) remindUnread(ctx context.Context) (string, error) {
	users := a.db.usersWithUnread()
	var offline []string
	for len(users) > 0 {
		n := min(len(users), maxOnlineBatch)
		on, err := a.tr.Online(ctx, users[:n])
		if err != nil {
			return "", err
		}
		isOn := map[string]bool{}
		for _, u := range on {
			isOn[u] = true
		}
		for _, u := range users[:n] {
			if !isOn[u] {
				offline = append(offline, u)
			}
		}
		users = users[n:]
	}
	for _, u := range offline {
		n := 0
		for _, c := range a.db.unreadOf(u) {
			n += c
		}
		if _, err := a.pushes.Enqueue(ctx, push{User: u, Kind: "reminder", Text: fmt.Sprintf("you have %d unread messages", n)}); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d users with unread messages, %d offline reminded", len(a.db.usersWithUnread()), len(offline)), nil
}

// cleanUpTokens is the cleanup-tokens job: FCM tokens that FCM reported
// unregistered are deleted.
func (a *app) cleanUpTokens(context.Context) (string, error) {
	return fmt.Sprintf("%d unregistered tokens deleted", a.db.deleteInvalidTokens()), nil
}

// push is a job of the "fcm" queue: one notification to all of a user's
// devices.
type push struct {
	User         string `json:"user"`
	Kind         string `json:"kind"` // "message" or "reminder"
	Conversation string `json:"conversation,omitempty"`
	Text         string `json:"text"`
}

// sendPush is the worker: it sends the notification to each of the
// user's FCM tokens (a stand-in for the FCM API that answers
// "unregistered" for tokens starting "stale-"), marking the dead ones
// for the cleanup job. An error would retry the job with backoff.
func (a *app) sendPush(ctx context.Context, j *queue.Job[push]) error {
	p := j.Payload
	toks := a.db.tokensOf(p.User)
	for _, tok := range toks {
		if strings.HasPrefix(tok, "stale-") {
			a.db.markInvalid(tok)
		}
	}
	for _, tok := range toks {
		if !strings.HasPrefix(tok, "stale-") {
			a.db.recordPush(fmt.Sprintf("%s %s -> %s", p.Kind, p.User, tok))
		}
	}
	return nil
}

// db is the application's database (PostgreSQL in the seed): messages
// counted unread per user and conversation, FCM tokens, pushes sent.
type db struct {
	mu       sync.Mutex
	members  map[string][]string          // conversation -> members
	unread   map[string]map[string]int    // user -> conversation -> unread
	tokens   map[string]map[string]string // user -> token -> "ok" | "invalid"
	pushLog  []string
	messages int
}

func newDB() *db {
	return &db{members: map[string][]string{}, unread: map[string]map[string]int{}, tokens: map[string]map[string]string{}}
}

func (d *db) createConversation(conv string, members []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.members[conv] = append([]string(nil), members...)
}

// addMessage stores a message of from in conv and returns the other
// members, for whom it is unread; false if from is not a member.
func (d *db) addMessage(conv, from string) ([]string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var others []string
	member := false
	for _, m := range d.members[conv] {
		if m == from {
			member = true
			continue
		}
		others = append(others, m)
	}
	if !member {
		return nil, false
	}
	d.messages++
	for _, u := range others {
		if d.unread[u] == nil {
			d.unread[u] = map[string]int{}
		}
		d.unread[u][conv]++
	}
	return others, true
}

func (d *db) markRead(conv, user string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.unread[user], conv)
	if len(d.unread[user]) == 0 {
		delete(d.unread, user)
	}
}

func (d *db) unreadOf(user string) map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for c, n := range d.unread[user] {
		out[c] = n
	}
	return out
}

func (d *db) usersWithUnread() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var us []string
	for u := range d.unread {
		us = append(us, u)
	}
	sort.Strings(us)
	return us
}

func (d *db) addToken(user, tok string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tokens[user] == nil {
		d.tokens[user] = map[string]string{}
	}
	d.tokens[user][tok] = "ok"
}

func (d *db) tokensOf(user string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ts []string
	for t, st := range d.tokens[user] {
		if st == "ok" {
			ts = append(ts, t)
		}
	}
	sort.Strings(ts)
	return ts
}

func (d *db) markInvalid(tok string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ts := range d.tokens {
		if _, ok := ts[tok]; ok {
			ts[tok] = "invalid"
		}
	}
}

func (d *db) deleteInvalidTokens() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, ts := range d.tokens {
		for t, st := range ts {
			if st == "invalid" {
				delete(ts, t)
				n++
			}
		}
	}
	return n
}

func (d *db) recordPush(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pushLog = append(d.pushLog, s)
}

func (d *db) sentPushes() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string{}, d.pushLog...)
}
