package cache_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/tenaxhq/tenax/cache"
)

func Example() {
	dir, err := os.MkdirTemp("", "tenax-cache")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := cache.Open(filepath.Join(dir, "cache"), cache.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // writes and syncs what the last FlushDelay put

	// The key covers everything that determines the answer.
	key, err := cache.Key(map[string]any{
		"provider": "openai", "model": "gpt-4o-mini",
		"messages": []string{"Translate '辆' to Spanish."},
	})
	if err != nil {
		log.Fatal(err)
	}

	if _, ok, _ := c.Get(key); !ok {
		fmt.Println("miss: call the model")
		_ = c.Put(key, []byte(`{"es":"vehículo"}`))
	}
	answer, ok, _ := c.Get(key)
	fmt.Printf("hit=%v %s\n", ok, answer)

	// The answer proved invalid: drop it so the next run asks again.
	_ = c.Reject(key, "at '/es': does not match pattern")
	_, ok, _ = c.Get(key)
	fmt.Println("after reject, hit =", ok)
	// Output:
	// miss: call the model
	// hit=true {"es":"vehículo"}
	// after reject, hit = false
}
