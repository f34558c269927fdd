// Command ai-chat runs a chat loop against a deterministic fake model and
// shows what package aimemory keeps for it: the conversation window that
// fits the model's token budget (system prompt pinned), a summary of what
// the cap evicted, the model's answer streamed on pubsub:ai:response and
// appended when the stream ends, the response cache answering a repeated
// prompt without calling the model, and the daily token budget refusing
// a turn.
//
//	go run ./examples/ai-chat                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/ai-chat
//	REDIS_URL=127.0.0.1:7001,127.0.0.1:7002 go run ./examples/ai-chat
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redschema/redschema/aimemory"
	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/pubsub"
)

const (
	user        = "user-42"
	model       = "fake-1"
	promptLimit = 60  // the model's context window, in tokens
	dailyLimit  = 185 // the user's tokens per day
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// fakeModel answers deterministically: it names the last question and
// how much context it was given.
func fakeModel(prompt []aimemory.Message) string {
	last := prompt[len(prompt)-1].Content
	return fmt.Sprintf("About %q: I was given %d messages of context.", last, len(prompt))
}

// summarize is the summary hook: a real one would ask the model; this
// one keeps the first words of each evicted message.
func summarize(_ context.Context, previous string, evicted []aimemory.Message) (string, error) {
	parts := []string{}
	if previous != "" {
		parts = append(parts, previous)
	}
	for _, m := range evicted {
		words := strings.Fields(m.Content)
		parts = append(parts, string(m.Role)+": "+strings.Join(words[:min(3, len(words))], " ")+"...")
	}
	return strings.Join(parts, " | "), nil
}

func run(out io.Writer) error {
	ctx := context.Background()
	var modelCalls atomic.Int64 // how many times the model was called
	rdb, closeRedis, err := connect.FromEnv(ctx, out)
	if err != nil {
		return err
	}
	defer closeRedis()
	// A namespace of its own per run keeps runs on a shared server apart.
	ns := keys.Namespace{Prefix: "ai-chat-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"}
	mem, err := aimemory.New(rdb, aimemory.WithNamespace(ns), aimemory.WithMaxMessages(6),
		aimemory.WithDailyBudget(dailyLimit), aimemory.WithSummarizer(summarize), aimemory.WithSource("ai-chat"))
	if err != nil {
		return err
	}
	defer mem.Close()

	// A subscriber, as a browser's server-sent events would have: it
	// counts the streamed chunks of each answer.
	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	chunks, err := pubsub.Subscribe(subCtx, mem.Bus(), pubsub.TopicAIResponse())
	if err != nil {
		return err
	}
	streamed := make(chan int)
	subscribed := make(chan struct{}) // closed once the subscription is closed
	go func() {
		defer close(subscribed)
		n := 0
		for ev := range chunks {
			if ev.Payload.Chunk == "" { // the end of one answer
				select {
				case streamed <- n:
				case <-subCtx.Done():
				}
				n = 0
				continue
			}
			n++
		}
	}()
	// Stop the subscriber and wait for it before the deferred closes of
	// mem and the client run: nothing may use a client being closed.
	defer func() { stopSub(); <-subscribed }()

	system := aimemory.Message{Role: aimemory.System, Content: "You are a patient tutor. Answer briefly."}
	chat := func(conv, question string) error {
		fmt.Fprintf(out, "\n[%s] user: %s\n", conv, question)
		if _, err := mem.Append(ctx, user, conv, []aimemory.Message{{Role: aimemory.User, Content: question}}); err != nil {
			return err
		}
		w, err := mem.Window(ctx, user, conv, aimemory.WithTokenBudget(promptLimit))
		if err != nil {
			return err
		}
		prompt := w.All()
		fmt.Fprintf(out, "  window: %d of %d messages, %d tokens (budget %d), system prompt pinned: %v, summary: %v\n",
			len(w.Messages), w.Length, w.Tokens, promptLimit, w.System != nil, w.Summary != nil)
		if w.Summary != nil {
			fmt.Fprintf(out, "  summary of %d evicted messages: %s\n", w.Summary.Covered, w.Summary.Text)
		}
		var answer string
		r, err := mem.Response(ctx, aimemory.Request{Model: model, Messages: prompt}, func(ctx context.Context) (string, error) {
			modelCalls.Add(1)
			return fakeModel(prompt), nil
		})
		if err != nil {
			return err
		}
		answer = r.Text
		if r.Status.String() == "hit" {
			// The cached answer goes straight into the conversation.
			if _, err := mem.Append(ctx, user, conv, []aimemory.Message{{Role: aimemory.Assistant, Content: answer}}); err != nil {
				return err
			}
			fmt.Fprintf(out, "  assistant (response cache hit, model not called): %s\n", answer)
			return nil
		}
		// A fresh answer is streamed word by word, then appended.
		s, err := mem.Stream(user, conv)
		if err != nil {
			return err
		}
		for _, word := range strings.SplitAfter(answer, " ") {
			if err := s.Send(ctx, word); err != nil {
				return err
			}
		}
		res, err := s.End(ctx, 0)
		if err != nil {
			return err
		}
		n := <-streamed
		fmt.Fprintf(out, "  assistant (streamed in %d chunks): %s\n", n, answer)
		fmt.Fprintf(out, "  conversation: %d messages, %d evicted by this turn; %s has used %d tokens today\n",
			res.Length, res.Evicted, user, res.TokensToday)
		return nil
	}

	for _, conv := range []string{"algebra", "history"} {
		if _, err := mem.Append(ctx, user, conv, []aimemory.Message{system}); err != nil {
			return err
		}
	}
	questions := []struct{ conv, q string }{
		{"algebra", "What is a variable?"},
		{"algebra", "How do I solve two x plus three equals seven?"},
		{"algebra", "And what if the three were negative?"},
		{"algebra", "Can you give me one more exercise?"},
		{"history", "What is a variable?"}, // the same prompt as the first turn
		{"history", "Who built the pyramids at Giza?"},
		{"history", "How long did it take them to build the largest one?"},
	}
	answers := 0
	for _, t := range questions {
		err := chat(t.conv, t.q)
		if errors.Is(err, aimemory.ErrBudgetExceeded) {
			u, uerr := mem.User(ctx, user)
			if uerr != nil {
				return uerr
			}
			fmt.Fprintf(out, "  refused: the daily budget of %d tokens is spent (%d used on %s); it starts again at midnight UTC\n",
				dailyLimit, u.TokensToday, u.Day)
			break
		}
		if err != nil {
			return err
		}
		answers++
	}
	fmt.Fprintf(out, "\n%d answers, the model was called %d times\n", answers, modelCalls.Load())
	u, err := mem.User(ctx, user)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "user context: last conversation %q, %d tokens today\n", u.LastConversationID, u.TokensToday)
	erased, err := mem.EraseUser(ctx, user)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "erased %s: %d conversations, %d cached responses\n", user, erased.Conversations, erased.Responses)
	return nil
}
