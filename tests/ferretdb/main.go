// Copyright: Tactician maintainers
// Apache License 2.0 (see LICENSE)

// Command ferretdb-lab runs FerretDB (a MongoDB-compatible server) from its embeddable package for the lab and
// the tests, with the SQLite handler on one state directory. FerretDB's own command-line program cannot be
// built with plain `go build`/`go install` (it wants a version file its release build writes); this program
// needs nothing but the module proxy.
//
//	ferretdb-lab -listen 127.0.0.1:27217 -state-dir DIR [-log-file FILE] [-log-level info] [-exit-on-stdin-eof]
//
// Everything it writes goes under -state-dir (the SQLite databases) and to -log-file (standard error when
// empty). It stops cleanly on SIGTERM or SIGINT and, with -exit-on-stdin-eof, when its standard input closes
// (the process that started it went away). It prints "FERRETDB READY <mongodb:// URI>" to the log once it listens (a port 0 is
// resolved to the one the kernel gave).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27217", "TCP address to listen on (host:port)")
	stateDir := flag.String("state-dir", "", "directory of the SQLite databases (required; created if missing)")
	logFile := flag.String("log-file", "", "log file (appended to); standard error when empty")
	logLevel := flag.String("log-level", "info", "log level: debug, info, warn or error")
	tlsListen := flag.String("tls-listen", "", "TLS address to listen on as well (host:port); empty: none")
	tlsCert := flag.String("tls-cert", "", "server certificate (PEM) for -tls-listen")
	tlsKey := flag.String("tls-key", "", "server key (PEM) for -tls-listen")
	tlsCA := flag.String("tls-ca", "", "CA certificate (PEM) that client certificates must chain to")
	stdinEOF := flag.Bool("exit-on-stdin-eof", false, "stop when standard input closes")
	flag.Parse()

	if err := run(*listen, *stateDir, *logFile, *logLevel, *tlsListen, *tlsCert, *tlsKey, *tlsCA, *stdinEOF); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb-lab:", err)
		os.Exit(1)
	}
}

func run(listen, stateDir, logFile, logLevel, tlsListen, tlsCert, tlsKey, tlsCA string, stdinEOF bool) error {
	if stateDir == "" {
		return fmt.Errorf("-state-dir is required")
	}
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return err
	}
	if err = os.MkdirAll(dir, 0o700); err != nil {
		return err
	}

	var level slog.Level
	if err = level.UnmarshalText([]byte(logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	var out io.Writer = os.Stderr
	if logFile != "" {
		f, ferr := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if ferr != nil {
			return ferr
		}
		defer f.Close()
		out = f
	}
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))

	f, err := ferretdb.New(&ferretdb.Config{
		Listener: ferretdb.ListenerConfig{
			TCP:         listen,
			TLS:         tlsListen,
			TLSCertFile: tlsCert,
			TLSKeyFile:  tlsKey,
			TLSCAFile:   tlsCA,
		},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + dir + "/",
	})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if stdinEOF {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			logger.Info("standard input closed: stopping")
			cancel()
		}()
	}

	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()

	// New has opened the listeners already (so a port 0 is resolved here); Run accepts on them.
	fmt.Fprintf(out, "FERRETDB READY %s\n", f.MongoDBURI())

	err = <-done
	logger.Info("stopped")
	return err
}
