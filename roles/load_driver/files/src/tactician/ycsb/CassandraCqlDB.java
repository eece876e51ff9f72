// Copyright: Tactician maintainers
// Apache License 2.0 (see LICENSE)
package tactician.ycsb;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.CqlSessionBuilder;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.ColumnDefinition;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.metadata.EndPoint;
import com.datastax.oss.driver.api.core.ssl.SslEngineFactory;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * YCSB binding for Apache Cassandra over CQL (DataStax/Apache Java driver 4).
 *
 * <p>Table: {@code CREATE TABLE usertable (y_id text PRIMARY KEY, field0 blob, ...)}; the load driver creates it.
 * One session per JVM, shared by the client threads; statements are prepared once per field set.
 * Properties: cassandra.hosts, cassandra.port, cassandra.keyspace, cassandra.username, cassandra.password,
 * cassandra.ssl (with the properties of {@link Tls} under cassandra.ssl: cafile, certfile, keyfile, validate,
 * checkhostname), cassandra.readconsistencylevel, cassandra.writeconsistencylevel, cassandra.datacenter, cassandra.connections, cassandra.requesttimeoutms. The password comes from the properties
 * file the driver writes with mode 0600, never from the command line.
 */
public class CassandraCqlDB extends DB {
  private static final Object LOCK = new Object();
  private static CqlSession session;
  private static int references;
  private static ConsistencyLevel readConsistency;
  private static ConsistencyLevel writeConsistency;
  private static final Map<String, PreparedStatement> STATEMENTS = new ConcurrentHashMap<>();
  private static final String KEY = "y_id";

  private String table = "usertable";

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    table = p.getProperty("table", "usertable");
    synchronized (LOCK) {
      references++;
      if (session != null) {
        return;
      }
      try {
        String[] hosts = p.getProperty("cassandra.hosts", "127.0.0.1").split(",");
        int port = Integer.parseInt(p.getProperty("cassandra.port", "9042"));
        String dc = p.getProperty("cassandra.datacenter", "datacenter1");
        int connections = Integer.parseInt(p.getProperty("cassandra.connections", "2"));
        long timeout = Long.parseLong(p.getProperty("cassandra.requesttimeoutms", "12000"));
        DriverConfigLoader loader = DriverConfigLoader.programmaticBuilder()
            .withInt(DefaultDriverOption.CONNECTION_POOL_LOCAL_SIZE, connections)
            .withInt(DefaultDriverOption.CONNECTION_MAX_REQUESTS, 32768)
            .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofMillis(timeout))
            .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofSeconds(10))
            .withDuration(DefaultDriverOption.CONTROL_CONNECTION_TIMEOUT, Duration.ofSeconds(10))
            // YCSB's operations are idempotent (reads, and writes of given values), so the driver may retry one
            // on the next replica when its coordinator goes away mid-request (a node drained by a rolling change).
            .withBoolean(DefaultDriverOption.REQUEST_DEFAULT_IDEMPOTENCE,
                Boolean.parseBoolean(p.getProperty("cassandra.idempotent", "true")))
            .build();
        CqlSessionBuilder builder = CqlSession.builder().withConfigLoader(loader).withLocalDatacenter(dc);
        for (String host : hosts) {
          builder.addContactPoint(new InetSocketAddress(host.trim(), port));
        }
        String user = p.getProperty("cassandra.username");
        if (user != null && !user.isEmpty()) {
          builder.withAuthCredentials(user, p.getProperty("cassandra.password", ""));
        }
        if (Boolean.parseBoolean(p.getProperty("cassandra.ssl", "false"))) {
          builder.withSslEngineFactory(new Engines(Tls.context(p, "cassandra.ssl"),
              Tls.checkHostname(p, "cassandra.ssl")));
        }
        builder.withKeyspace(p.getProperty("cassandra.keyspace", "ycsb"));
        session = builder.build();
        readConsistency = DefaultConsistencyLevel.valueOf(p.getProperty("cassandra.readconsistencylevel", "ONE"));
        writeConsistency = DefaultConsistencyLevel.valueOf(p.getProperty("cassandra.writeconsistencylevel", "ONE"));
      } catch (Exception e) {
        references--;
        throw new DBException("cannot connect to Cassandra: " + e.getMessage(), e);
      }
    }
  }

  /**
   * TLS engines whose certificate check names the node as it was given (the address or name of the contact point
   * or of the peer): the driver's own factory asks a reverse lookup for a name, which an address-only certificate
   * does not hold and a machine without DNS answers slowly.
   */
  static final class Engines implements SslEngineFactory {
    private final SSLContext context;
    private final boolean checkHostname;

    Engines(SSLContext context, boolean checkHostname) {
      this.context = context;
      this.checkHostname = checkHostname;
    }

    @Override
    public SSLEngine newSslEngine(EndPoint endPoint) {
      InetSocketAddress address = (InetSocketAddress) endPoint.resolve();
      SSLEngine engine = context.createSSLEngine(address.getHostString(), address.getPort());
      engine.setUseClientMode(true);
      if (checkHostname) {
        SSLParameters parameters = engine.getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        engine.setSSLParameters(parameters);
      }
      return engine;
    }

    @Override
    public void close() {}
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (LOCK) {
      references--;
      if (references == 0 && session != null) {
        session.close();
        session = null;
        STATEMENTS.clear();
      }
    }
  }

  private PreparedStatement prepare(String cacheKey, String cql) {
    return STATEMENTS.computeIfAbsent(cacheKey, k -> session.prepare(cql));
  }

  private static String columns(Set<String> fields) {
    return fields == null ? "*" : String.join(",", fields);
  }

  private static void copyRow(Row row, Map<String, ByteIterator> result) {
    for (ColumnDefinition def : row.getColumnDefinitions()) {
      String name = def.getName().asInternal();
      if (name.equals(KEY)) {
        continue;
      }
      ByteBuffer value = row.getByteBuffer(name);
      byte[] bytes = new byte[value == null ? 0 : value.remaining()];
      if (value != null) {
        value.duplicate().get(bytes);
      }
      result.put(name, new ByteArrayByteIterator(bytes));
    }
  }

  @Override
  public Status read(String tbl, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      String cols = columns(fields);
      PreparedStatement ps = prepare("r:" + tbl + ":" + cols, "SELECT " + cols + " FROM " + tbl + " WHERE " + KEY + " = ?");
      Row row = session.execute(ps.bind(key).setConsistencyLevel(readConsistency)).one();
      if (row == null) {
        return Status.NOT_FOUND;
      }
      copyRow(row, result);
      return Status.OK;
    } catch (Exception e) {
      return Failures.failed("Cassandra", e);
    }
  }

  @Override
  public Status scan(String tbl, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    try {
      String cols = columns(fields);
      PreparedStatement ps = prepare("s:" + tbl + ":" + cols,
          "SELECT " + cols + " FROM " + tbl + " WHERE token(" + KEY + ") >= token(?) LIMIT ?");
      ResultSet rs = session.execute(ps.bind(startkey, recordcount).setConsistencyLevel(readConsistency));
      for (Row row : rs) {
        HashMap<String, ByteIterator> values = new HashMap<>();
        copyRow(row, values);
        result.add(values);
      }
      return Status.OK;
    } catch (Exception e) {
      return Failures.failed("Cassandra", e);
    }
  }

  @Override
  public Status update(String tbl, String key, Map<String, ByteIterator> values) {
    try {
      List<String> names = new ArrayList<>(values.keySet());
      java.util.Collections.sort(names);
      StringBuilder sets = new StringBuilder();
      for (String name : names) {
        sets.append(sets.length() == 0 ? "" : ",").append(name).append(" = ?");
      }
      PreparedStatement ps = prepare("u:" + tbl + ":" + names,
          "UPDATE " + tbl + " SET " + sets + " WHERE " + KEY + " = ?");
      session.execute(bind(ps, names, values, key, false).setConsistencyLevel(writeConsistency));
      return Status.OK;
    } catch (Exception e) {
      return Failures.failed("Cassandra", e);
    }
  }

  @Override
  public Status insert(String tbl, String key, Map<String, ByteIterator> values) {
    try {
      List<String> names = new ArrayList<>(values.keySet());
      java.util.Collections.sort(names);
      StringBuilder marks = new StringBuilder("?");
      for (int i = 0; i < names.size(); i++) {
        marks.append(",?");
      }
      PreparedStatement ps = prepare("i:" + tbl + ":" + names, "INSERT INTO " + tbl + " (" + KEY + ","
          + String.join(",", names) + ") VALUES (" + marks + ")");
      session.execute(bind(ps, names, values, key, true).setConsistencyLevel(writeConsistency));
      return Status.OK;
    } catch (Exception e) {
      return Failures.failed("Cassandra", e);
    }
  }

  private static BoundStatement bind(PreparedStatement ps, List<String> names, Map<String, ByteIterator> values,
                                     String key, boolean keyFirst) {
    Object[] args = new Object[names.size() + 1];
    int i = 0;
    if (keyFirst) {
      args[i++] = key;
    }
    for (String name : names) {
      args[i++] = ByteBuffer.wrap(values.get(name).toArray());
    }
    if (!keyFirst) {
      args[i] = key;
    }
    return ps.bind(args);
  }

  @Override
  public Status delete(String tbl, String key) {
    try {
      PreparedStatement ps = prepare("d:" + tbl, "DELETE FROM " + tbl + " WHERE " + KEY + " = ?");
      session.execute(ps.bind(key).setConsistencyLevel(writeConsistency));
      return Status.OK;
    } catch (Exception e) {
      return Failures.failed("Cassandra", e);
    }
  }
}
