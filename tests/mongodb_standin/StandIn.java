// Copyright: Tactician maintainers
// Apache License 2.0 (see LICENSE)
//
// In-memory MongoDB stand-in for the tests: mongo-java-server with its memory backend, bound on the
// given address. Run as a single source file (Java 11 or later):
//
//   java -cp 'lib/*' StandIn.java HOST PORT [3.6|4.0|5.0] [--exit-on-stdin-eof]
//
// The optional version selects what buildInfo and the wire version report (default 5.0). With
// --exit-on-stdin-eof the process also stops when its standard input closes, so it cannot outlive the
// test run that started it. Prints one line "STANDIN READY host:port version=V" on stdout once it
// accepts connections, then runs until it is stopped (SIGTERM, SIGINT). The data lives in memory only.

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.ServerVersion;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

public final class StandIn {

    private static final String USAGE = "usage: java -cp 'lib/*' StandIn.java HOST PORT [3.6|4.0|5.0] [--exit-on-stdin-eof]";

    private StandIn() {
    }

    private static ServerVersion parseVersion(String text) {
        switch (text) {
            case "3.6":
                return ServerVersion.MONGO_3_6;
            case "4.0":
                return ServerVersion.MONGO_4_0;
            case "5.0":
                return ServerVersion.MONGO_5_0;
            default:
                throw new IllegalArgumentException("unknown server version " + text + " (3.6, 4.0 or 5.0)");
        }
    }

    private static void exitOnStdinEof() {
        Thread watcher = new Thread(() -> {
            InputStream in = System.in;
            byte[] buffer = new byte[256];
            try {
                while (in.read(buffer) >= 0) {
                    // input is ignored; only its end matters
                }
            } catch (IOException ignored) {
                // a broken pipe means the same as end of input
            }
            System.exit(0);
        }, "standin-stdin-watch");
        watcher.setDaemon(true);
        watcher.start();
    }

    public static void main(String[] args) throws InterruptedException {
        List<String> positional = new ArrayList<>();
        boolean watchStdin = false;
        for (String arg : args) {
            if ("--exit-on-stdin-eof".equals(arg)) {
                watchStdin = true;
            } else {
                positional.add(arg);
            }
        }
        if (positional.size() < 2 || positional.size() > 3) {
            System.err.println(USAGE);
            System.exit(2);
        }
        String host = positional.get(0);
        int port = Integer.parseInt(positional.get(1));
        String version = positional.size() == 3 ? positional.get(2) : "5.0";

        MemoryBackend backend = new MemoryBackend();
        backend.version(parseVersion(version));
        MongoServer server = new MongoServer(backend);
        server.bind(host, port);

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.shutdownNow();
            stopped.countDown();
        }, "standin-shutdown"));
        if (watchStdin) {
            exitOnStdinEof();
        }

        InetSocketAddress bound = server.getLocalAddress();
        System.out.println("STANDIN READY " + bound.getHostString() + ":" + bound.getPort() + " version=" + version);
        System.out.flush();
        stopped.await();
    }
}
