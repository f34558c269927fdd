package aimemory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/aimemory"
)

func connect() (*redis.Client, func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	return rdb, func() { _ = rdb.Close(); m.Close() }
}

// A conversation capped at four messages, with its system prompt pinned,
// read back as a window that fits a token budget.
func Example() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	mem, err := aimemory.New(rdb, aimemory.WithMaxMessages(4))
	if err != nil {
		panic(err)
	}
	defer mem.Close()

	turns := []aimemory.Message{
		{Role: aimemory.System, Content: "You are terse.", Tokens: 5},
		{Role: aimemory.User, Content: "Hi!", Tokens: 2},
		{Role: aimemory.Assistant, Content: "Hello.", Tokens: 2},
		{Role: aimemory.User, Content: "What is Redis?", Tokens: 4},
		{Role: aimemory.Assistant, Content: "An in-memory data store.", Tokens: 6},
	}
	for _, t := range turns {
		if _, err := mem.Append(ctx, "user-42", "conv-1", []aimemory.Message{t}); err != nil {
			panic(err)
		}
	}
	w, err := mem.Window(ctx, "user-42", "conv-1", aimemory.WithTokenBudget(12))
	if err != nil {
		panic(err)
	}
	for _, m := range w.All() {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	fmt.Println("tokens:", w.Tokens, "of", w.Length, "messages, omitted:", w.Omitted)
	// Output:
	// system: You are terse.
	// assistant: An in-memory data store.
	// tokens: 11 of 4 messages, omitted: 2
}

// A daily token budget refuses the append that would pass it, in the
// same script that counts the tokens.
func ExampleWithDailyBudget() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	mem, err := aimemory.New(rdb, aimemory.WithDailyBudget(100))
	if err != nil {
		panic(err)
	}
	defer mem.Close()
	for _, tokens := range []int{60, 30, 20} {
		res, err := mem.Append(ctx, "user-42", "conv-1", []aimemory.Message{{Role: aimemory.User, Content: "...", Tokens: tokens}})
		switch {
		case errors.Is(err, aimemory.ErrBudgetExceeded):
			fmt.Println("refused: the user has", res.TokensToday, "tokens today")
		case err != nil:
			panic(err)
		default:
			fmt.Println("appended: the user has", res.TokensToday, "tokens today")
		}
	}
	// Output:
	// appended: the user has 60 tokens today
	// appended: the user has 90 tokens today
	// refused: the user has 90 tokens today
}

// A summarizer folds the messages the cap evicts into a summary that the
// window returns.
func ExampleWithSummarizer() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	summarize := func(_ context.Context, previous string, evicted []aimemory.Message) (string, error) {
		var b strings.Builder
		b.WriteString(previous)
		for _, m := range evicted {
			fmt.Fprintf(&b, "[%s said %q]", m.Role, m.Content)
		}
		return b.String(), nil
	}
	mem, err := aimemory.New(rdb, aimemory.WithMaxMessages(2), aimemory.WithSummarizer(summarize))
	if err != nil {
		panic(err)
	}
	defer mem.Close()
	for _, c := range []string{"one", "two", "three"} {
		if _, err := mem.Append(ctx, "user-42", "conv-1", []aimemory.Message{{Role: aimemory.User, Content: c, Tokens: 1}}); err != nil {
			panic(err)
		}
	}
	w, err := mem.Window(ctx, "user-42", "conv-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("summary:", w.Summary.Text)
	for _, m := range w.Messages {
		fmt.Println(m.Role, m.Content)
	}
	// Output:
	// summary: [user said "one"]
	// user two
	// user three
}

// The response cache answers an identical request from Redis; the model
// is called once.
func ExampleMemory_Response() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	mem, err := aimemory.New(rdb)
	if err != nil {
		panic(err)
	}
	defer mem.Close()
	req := aimemory.Request{
		Model:    "gpt-4o",
		Messages: []aimemory.Message{{Role: aimemory.User, Content: "Capital of France?"}},
		Params:   map[string]any{"temperature": 0},
	}
	for i := 0; i < 2; i++ {
		r, err := mem.Response(ctx, req, func(ctx context.Context) (string, error) {
			fmt.Println("calling the model")
			return "Paris.", nil
		})
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Status, r.Text)
	}
	// Output:
	// calling the model
	// loaded Paris.
	// hit Paris.
}

// An admin page reads a user's context and a conversation's window in
// one pipeline, through an Inspector.
func ExampleNewInspector() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()
	mem, err := aimemory.New(rdb)
	if err != nil {
		panic(err)
	}
	defer mem.Close()
	turns := []aimemory.Message{{Role: aimemory.User, Content: "Hi!", Tokens: 2}, {Role: aimemory.Assistant, Content: "Hello.", Tokens: 2}}
	if _, err := mem.Append(ctx, "u1", "c1", turns); err != nil {
		panic(err)
	}
	in, err := aimemory.NewInspector(rdb)
	if err != nil {
		panic(err)
	}
	v, err := in.ReadView(ctx, "u1", "c1")
	if err != nil {
		panic(err)
	}
	fmt.Println(v.User.LastConversationID, v.User.TokensToday, v.Window.Length, v.Window.Tokens)
	// Output:
	// c1 4 2 4
}
