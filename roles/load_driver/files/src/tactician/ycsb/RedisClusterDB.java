// Copyright: Tactician maintainers
// Apache License 2.0 (see LICENSE)
package tactician.ycsb;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLParameters;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisCluster;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * YCSB binding for a Redis Cluster (Jedis): a record is a hash at its key.
 *
 * <p>Scans use a sorted set "_indices" of keys scored by their hash, as YCSB's own Redis binding does; it is
 * maintained on insert only when redis.scanindex is true (the driver turns it on for workloads with scans), so a
 * workload without scans sends exactly one command per operation. Properties: redis.nodes (host:port,...),
 * redis.user, redis.password, redis.tls (with the properties of {@link Tls} under redis.tls), redis.poolsize,
 * redis.timeoutms. The password comes from the properties file the driver writes with mode 0600.
 */
public class RedisClusterDB extends DB {
  private static final Object LOCK = new Object();
  private static JedisCluster cluster;
  private static int references;
  private static boolean scanIndex;
  private static final String INDEX = "_indices";
  /** Commands sent to the servers, printed at the end: a scan is one range query plus one read per record. */
  private static final AtomicLong COMMANDS = new AtomicLong();

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    synchronized (LOCK) {
      references++;
      if (cluster != null) {
        return;
      }
      try {
        Set<HostAndPort> nodes = new HashSet<>();
        for (String node : p.getProperty("redis.nodes", "127.0.0.1:6381").split(",")) {
          nodes.add(HostAndPort.from(node.trim()));
        }
        int timeout = Integer.parseInt(p.getProperty("redis.timeoutms", "5000"));
        DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(timeout).socketTimeoutMillis(timeout)
            .ssl(Boolean.parseBoolean(p.getProperty("redis.tls", "false")));
        if (Boolean.parseBoolean(p.getProperty("redis.tls", "false"))) {
          config.sslSocketFactory(Tls.context(p, "redis.tls").getSocketFactory());
          if (Tls.checkHostname(p, "redis.tls")) {
            // the JDK checks the certificate against the host each node is reached by (its address in the cluster)
            SSLParameters parameters = new SSLParameters();
            parameters.setEndpointIdentificationAlgorithm("HTTPS");
            config.sslParameters(parameters);
          }
        }
        String user = p.getProperty("redis.user");
        if (user != null && !user.isEmpty()) {
          config.user(user);
        }
        String password = p.getProperty("redis.password");
        if (password != null && !password.isEmpty()) {
          config.password(password);
        }
        GenericObjectPoolConfig<Connection> pool = new GenericObjectPoolConfig<>();
        int size = Integer.parseInt(p.getProperty("redis.poolsize",
            String.valueOf(Math.max(8, Integer.parseInt(p.getProperty("threadcount", "1")) + 2))));
        pool.setMaxTotal(size);
        pool.setMaxIdle(size);
        cluster = new JedisCluster(nodes, config.build(), 5, pool);
        scanIndex = Boolean.parseBoolean(p.getProperty("redis.scanindex", "false"));
      } catch (Exception e) {
        references--;
        throw new DBException("cannot connect to the Redis cluster: " + e.getMessage(), e);
      }
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (LOCK) {
      references--;
      if (references == 0 && cluster != null) {
        cluster.close();
        cluster = null;
        System.out.println("[SERVER-COMMANDS], Operations, " + COMMANDS.get());
      }
    }
  }

  private static double score(String key) {
    return (double) key.hashCode();
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      if (fields == null) {
        COMMANDS.incrementAndGet();
        Map<String, String> all = cluster.hgetAll(key);
        if (all.isEmpty()) {
          return Status.NOT_FOUND;
        }
        StringByteIterator.putAllAsByteIterators(result, all);
      } else {
        String[] names = fields.toArray(new String[0]);
        COMMANDS.incrementAndGet();
        List<String> values = cluster.hmget(key, names);
        for (int i = 0; i < names.length; i++) {
          result.put(names[i], new StringByteIterator(values.get(i) == null ? "" : values.get(i)));
        }
      }
      return Status.OK;
    } catch (Exception e) {
      return Failures.failed("Redis", e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      cluster.hset(key, StringByteIterator.getStringMap(values));
      COMMANDS.incrementAndGet();
      if (scanIndex) {
        cluster.zadd(INDEX, score(key), key);
        COMMANDS.incrementAndGet();
      }
      return Status.OK;
    } catch (Exception e) {
      return Failures.failed("Redis", e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      long removed = cluster.del(key);
      COMMANDS.incrementAndGet();
      if (scanIndex) {
        cluster.zrem(INDEX, key);
        COMMANDS.incrementAndGet();
      }
      return removed == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (Exception e) {
      return Failures.failed("Redis", e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      COMMANDS.incrementAndGet();
      cluster.hset(key, StringByteIterator.getStringMap(values));
      return Status.OK;
    } catch (Exception e) {
      return Failures.failed("Redis", e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    try {
      COMMANDS.incrementAndGet();
      List<String> keys = cluster.zrangeByScore(INDEX, score(startkey), Double.POSITIVE_INFINITY, 0, recordcount);
      for (String key : keys) {
        HashMap<String, ByteIterator> values = new HashMap<>();
        read(table, key, fields, values);
        result.add(values);
      }
      return Status.OK;
    } catch (Exception e) {
      return Failures.failed("Redis", e);
    }
  }
}
