package main

import (
	"context"
	"os"

	"github.com/hookscope/hookscope/storage"
)

func main() {
	db, err := storage.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if err := db.SetValue(context.Background(), "ui.settings", []byte(os.Args[2])); err != nil {
		panic(err)
	}
}
