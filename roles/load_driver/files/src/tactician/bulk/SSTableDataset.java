// Copyright: Tactician maintainers
// Apache License 2.0 (see LICENSE)
package tactician.bulk;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.io.sstable.CQLSSTableWriter;

/**
 * Writes a YCSB data set as SSTables, offline and fast, for {@code nodetool import}: the rows YCSB's load phase
 * would insert into {@code usertable (y_id text PRIMARY KEY, field0..N blob)} (keys {@code "user" + fnvhash64(n)}
 * as CoreWorkload builds them with insertorder=hashed, values of printable random bytes), written in token order
 * so that each SSTable covers its own token range, as a compacted table's do. max_sstable_mib 0 writes one SSTable (a
 * table after a major compaction, which size-tiered compaction leaves alone until new SSTables of its size come).
 *
 * <p>The SSTable version follows the node's storage_compatibility_mode (CASSANDRA_4, Cassandra 5.0's default, writes
 * the 4.x format "nb" that such a node reads and writes; NONE writes 5.0's "oa").
 *
 * <p>Arguments: out_dir keyspace table records fieldcount fieldlength seed max_sstable_mib
 * storage_compatibility_mode [table_options], the last the text after WITH in CREATE TABLE (the compression
 * option fixes the SSTables' chunk length, for example).
 */
public final class SSTableDataset {
  private SSTableDataset() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 9) {
      System.err.println(
          "usage: SSTableDataset out_dir keyspace table records fieldcount fieldlength seed max_sstable_mib"
              + " storage_compatibility_mode [table_options]");
      System.exit(2);
    }
    File out = new File(args[0]);
    String keyspace = args[1];
    String table = args[2];
    int records = Integer.parseInt(args[3]);
    int fields = Integer.parseInt(args[4]);
    int length = Integer.parseInt(args[5]);
    long seed = Long.parseLong(args[6]);
    int maxMib = Integer.parseInt(args[7]);
    String options = args.length > 9 ? args[9].trim() : "";
    long start = 0L;
    // Before any SSTable class is loaded: the format's version is fixed when its class initializes.
    // Initialized as a tool, not as a client (a client is put in mode NONE): the configuration file given by
    // -Dcassandra.config names the node's storage_compatibility_mode, which fixes the SSTable version.
    DatabaseDescriptor.toolInitialization();
    if (!DatabaseDescriptor.getStorageCompatibilityMode().name().equals(args[8])) {
      throw new IllegalStateException("storage_compatibility_mode is " + DatabaseDescriptor.getStorageCompatibilityMode()
          + ", not " + args[8] + ": check -Dcassandra.config");
    }
    if (!out.isDirectory() && !out.mkdirs()) {
      throw new IllegalStateException("cannot make " + out);
    }
    StringBuilder columns = new StringBuilder("y_id text PRIMARY KEY");
    StringBuilder names = new StringBuilder("y_id");
    StringBuilder marks = new StringBuilder("?");
    for (int i = 0; i < fields; i++) {
      columns.append(", field").append(i).append(" blob");
      names.append(", field").append(i);
      marks.append(", ?");
    }
    String schema = "CREATE TABLE " + keyspace + "." + table + " (" + columns + ")"
        + (options.isEmpty() ? "" : " WITH " + options);
    String insert = "INSERT INTO " + keyspace + "." + table + " (" + names + ") VALUES (" + marks + ")";

    long began = System.nanoTime();
    // Keys in token order: a sorted writer streams rows straight to disk.
    long[][] order = new long[records][];
    for (int i = 0; i < records; i++) {
      String key = key(start + i);
      long token = Murmur3Partitioner.instance.getToken(ByteBuffer.wrap(key.getBytes(StandardCharsets.UTF_8)))
          .getLongValue();
      order[i] = new long[] {token, start + i};
    }
    Arrays.parallelSort(order, (a, b) -> Long.compare(a[0], b[0]));
    CQLSSTableWriter.Builder builder = CQLSSTableWriter.builder()
        .inDirectory(out.getAbsolutePath())
        .forTable(schema)
        .using(insert)
        .sorted();
    if (maxMib > 0) {
      builder = builder.withMaxSSTableSizeInMiB(maxMib);
    }
    CQLSSTableWriter writer = builder.build();
    SplittableRandom random = new SplittableRandom(seed);
    List<Object> row = new ArrayList<>(fields + 1);
    for (int i = 0; i < records; i++) {
      row.clear();
      row.add(key(order[i][1]));
      for (int f = 0; f < fields; f++) {
        byte[] value = new byte[length];
        for (int b = 0; b < length; b++) {
          value[b] = (byte) (' ' + random.nextInt(95));
        }
        row.add(ByteBuffer.wrap(value));
      }
      writer.addRow(row);
      order[i] = null;
    }
    writer.close();
    double seconds = (System.nanoTime() - began) / 1e9;
    System.out.printf("rows=%d seconds=%.1f rows_per_s=%.0f%n", records, seconds, records / seconds);
  }

  /** The key YCSB's CoreWorkload gives record n (insertorder=hashed, zeropadding 1). */
  static String key(long n) {
    return "user" + site.ycsb.Utils.hash(n);
  }
}
