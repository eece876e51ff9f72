// Copyright: Tactician maintainers
// Apache License 2.0 (see LICENSE)
package tactician.ycsb;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.MongoCredential;
import com.mongodb.ReadPreference;
import com.mongodb.WriteConcern;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoCursor;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.Projections;
import com.mongodb.client.model.ReplaceOptions;
import com.mongodb.client.model.Sorts;
import com.mongodb.client.result.DeleteResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import javax.net.ssl.SSLContext;
import org.bson.Document;
import org.bson.types.Binary;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * YCSB binding for MongoDB (sync Java driver): a record is a document {_id: key, field0: binary, ...}.
 *
 * <p>Properties: mongodb.host, mongodb.port, mongodb.database, mongodb.user, mongodb.password,
 * mongodb.authsource, mongodb.authmechanism (SCRAM-SHA-256 or SCRAM-SHA-1), mongodb.tls (with the properties of
 * {@link Tls} under mongodb.tls), mongodb.replicaset,
 * mongodb.writeconcern (w1, majority), mongodb.poolsize. The password comes from the properties file the driver
 * writes with mode 0600; it is never put into a connection string.
 */
public class MongoDbDB extends DB {
  private static final Object LOCK = new Object();
  private static MongoClient client;
  private static String databaseName;
  private static WriteConcern writeConcern;
  private static int references;

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    synchronized (LOCK) {
      references++;
      if (client != null) {
        return;
      }
      try {
        String host = p.getProperty("mongodb.host", "127.0.0.1");
        String port = p.getProperty("mongodb.port", "27017");
        String rs = p.getProperty("mongodb.replicaset", "");
        String uri = "mongodb://" + host + ":" + port + "/?"
            + (rs.isEmpty() ? "directConnection=true" : "replicaSet=" + rs);
        MongoClientSettings.Builder settings = MongoClientSettings.builder()
            .applyConnectionString(new ConnectionString(uri))
            .applyToConnectionPoolSettings(b -> b.maxSize(Integer.parseInt(p.getProperty("mongodb.poolsize",
                String.valueOf(Math.max(8, Integer.parseInt(p.getProperty("threadcount", "1")) + 2))))))
            .readPreference(ReadPreference.primary());
        if (Boolean.parseBoolean(p.getProperty("mongodb.tls", "false"))) {
          SSLContext context = Tls.context(p, "mongodb.tls");
          boolean checkHostname = Tls.checkHostname(p, "mongodb.tls");
          settings.applyToSslSettings(b -> b.enabled(true).context(context).invalidHostNameAllowed(!checkHostname));
        }
        String user = p.getProperty("mongodb.user", "");
        if (!user.isEmpty()) {
          String source = p.getProperty("mongodb.authsource", "admin");
          char[] password = p.getProperty("mongodb.password", "").toCharArray();
          String mechanism = p.getProperty("mongodb.authmechanism", "");
          MongoCredential credential = "SCRAM-SHA-1".equals(mechanism)
              ? MongoCredential.createScramSha1Credential(user, source, password)
              : "SCRAM-SHA-256".equals(mechanism)
              ? MongoCredential.createScramSha256Credential(user, source, password)
              : MongoCredential.createCredential(user, source, password);
          settings.credential(credential);
        }
        writeConcern = "majority".equals(p.getProperty("mongodb.writeconcern", "w1"))
            ? WriteConcern.MAJORITY : WriteConcern.W1;
        databaseName = p.getProperty("mongodb.database", "ycsb");
        client = MongoClients.create(settings.build());
      } catch (Exception e) {
        references--;
        throw new DBException("cannot connect to MongoDB: " + e.getMessage(), e);
      }
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (LOCK) {
      references--;
      if (references == 0 && client != null) {
        client.close();
        client = null;
      }
    }
  }

  private static MongoCollection<Document> collection(String table) {
    return client.getDatabase(databaseName).getCollection(table).withWriteConcern(writeConcern);
  }

  private static void copy(Document doc, Map<String, ByteIterator> result) {
    for (Map.Entry<String, Object> entry : doc.entrySet()) {
      if (entry.getKey().equals("_id")) {
        continue;
      }
      Object value = entry.getValue();
      byte[] bytes = value instanceof Binary ? ((Binary) value).getData() : String.valueOf(value).getBytes();
      result.put(entry.getKey(), new ByteArrayByteIterator(bytes));
    }
  }

  private static Document toDocument(String key, Map<String, ByteIterator> values) {
    Document doc = new Document("_id", key);
    for (Map.Entry<String, ByteIterator> entry : values.entrySet()) {
      doc.append(entry.getKey(), entry.getValue().toArray());
    }
    return doc;
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      var find = collection(table).find(Filters.eq("_id", key));
      if (fields != null) {
        find = find.projection(Projections.include(new ArrayList<>(fields)));
      }
      Document doc = find.first();
      if (doc == null) {
        return Status.NOT_FOUND;
      }
      copy(doc, result);
      return Status.OK;
    } catch (Exception e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    try {
      var find = collection(table).find(Filters.gte("_id", startkey)).sort(Sorts.ascending("_id")).limit(recordcount);
      if (fields != null) {
        find = find.projection(Projections.include(new ArrayList<>(fields)));
      }
      try (MongoCursor<Document> cursor = find.iterator()) {
        while (cursor.hasNext()) {
          HashMap<String, ByteIterator> values = new HashMap<>();
          copy(cursor.next(), values);
          result.add(values);
        }
      }
      return Status.OK;
    } catch (Exception e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      Document set = new Document();
      for (Map.Entry<String, ByteIterator> entry : values.entrySet()) {
        set.append(entry.getKey(), entry.getValue().toArray());
      }
      long matched = collection(table).updateOne(Filters.eq("_id", key), new Document("$set", set)).getMatchedCount();
      return matched == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (Exception e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      collection(table).replaceOne(Filters.eq("_id", key), toDocument(key, values), new ReplaceOptions().upsert(true));
      return Status.OK;
    } catch (Exception e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      DeleteResult result = collection(table).deleteOne(Filters.eq("_id", key));
      return result.getDeletedCount() == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (Exception e) {
      return Status.ERROR;
    }
  }
}
