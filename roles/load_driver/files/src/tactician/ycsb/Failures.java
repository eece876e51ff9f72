// Copyright: Tactician maintainers
// Apache License 2.0 (see LICENSE)
package tactician.ycsb;

import java.util.concurrent.atomic.AtomicInteger;
import site.ycsb.Status;

/** A failed operation of a binding: counted by YCSB as ERROR; the first few causes go to stderr. */
final class Failures {
  private static final int REPORTED_AT_MOST = 5;
  private static final AtomicInteger REPORTED = new AtomicInteger();

  private Failures() {
  }

  static Status failed(String store, Exception e) {
    if (REPORTED.incrementAndGet() <= REPORTED_AT_MOST) {
      System.err.println("[tactician] " + store + " operation failed: " + e.getClass().getSimpleName() + ": "
          + e.getMessage());
    }
    return Status.ERROR;
  }
}
