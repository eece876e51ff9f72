// Copyright: Tactician maintainers
// Apache License 2.0 (see LICENSE)
package tactician.ycsb;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * The TLS side of every binding, from the same properties under a store's prefix (cassandra.ssl, redis.tls,
 * mongodb.tls): {@code <prefix>.cafile} (PEM certificates to trust; the JVM's own store without it),
 * {@code <prefix>.certfile} and {@code <prefix>.keyfile} (the client certificate a server that asks for one is
 * shown, PEM; the key unencrypted PKCS#8 or PKCS#1 RSA), {@code <prefix>.validate} (default true: false trusts any
 * certificate) and {@code <prefix>.checkhostname} (default true: the certificate must name the address connected
 * to). The bindings hand the context to their driver and turn the driver's hostname check on from
 * {@link #checkHostname}.
 */
final class Tls {
  private static final Pattern PEM =
      Pattern.compile("-----BEGIN ([A-Z ]+)-----([^-]+)-----END \\1-----", Pattern.DOTALL);

  private Tls() {}

  /** Whether the certificate must name the host connected to (never when certificates are not validated). */
  static boolean checkHostname(Properties p, String prefix) {
    return validate(p, prefix) && Boolean.parseBoolean(p.getProperty(prefix + ".checkhostname", "true"));
  }

  private static boolean validate(Properties p, String prefix) {
    return Boolean.parseBoolean(p.getProperty(prefix + ".validate", "true"));
  }

  /** The SSL context of the properties under prefix; an error names the property and the file. */
  static SSLContext context(Properties p, String prefix) throws Exception {
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(keyManagers(p, prefix), trustManagers(p, prefix), null);
    return context;
  }

  private static TrustManager[] trustManagers(Properties p, String prefix) throws Exception {
    if (!validate(p, prefix)) {
      return new TrustManager[] {new X509TrustManager() {
        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) {}

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) {}

        @Override
        public X509Certificate[] getAcceptedIssuers() {
          return new X509Certificate[0];
        }
      }};
    }
    String caFile = p.getProperty(prefix + ".cafile", "");
    if (caFile.isEmpty()) {
      return null; // the JVM's default trust store
    }
    KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
    store.load(null, null);
    int index = 0;
    for (Certificate cert : certificates(caFile, prefix + ".cafile")) {
      store.setCertificateEntry("ca" + index++, cert);
    }
    TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    factory.init(store);
    return factory.getTrustManagers();
  }

  private static KeyManager[] keyManagers(Properties p, String prefix) throws Exception {
    String certFile = p.getProperty(prefix + ".certfile", "");
    String keyFile = p.getProperty(prefix + ".keyfile", "");
    if (certFile.isEmpty() && keyFile.isEmpty()) {
      return null;
    }
    if (certFile.isEmpty() || keyFile.isEmpty()) {
      throw new IllegalArgumentException(prefix + ".certfile and " + prefix + ".keyfile go together: give both");
    }
    List<Certificate> chain = certificates(certFile, prefix + ".certfile");
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    store.setKeyEntry("client", privateKey(keyFile, prefix + ".keyfile"), new char[0],
        chain.toArray(new Certificate[0]));
    KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    factory.init(store, new char[0]);
    return factory.getKeyManagers();
  }

  /** The CERTIFICATE blocks of a PEM file; other blocks (the private key of MongoDB's one-file form) are skipped. */
  private static List<Certificate> certificates(String path, String property) throws Exception {
    List<Certificate> certs = new ArrayList<>();
    String text;
    try {
      text = new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new IllegalArgumentException(property + ": cannot read " + path + ": " + e.getMessage(), e);
    }
    StringBuilder only = new StringBuilder();
    Matcher block = PEM.matcher(text);
    while (block.find()) {
      if ("CERTIFICATE".equals(block.group(1))) {
        only.append(block.group(0)).append('\n');
      }
    }
    try (InputStream in = new ByteArrayInputStream(only.toString().getBytes(StandardCharsets.US_ASCII))) {
      certs.addAll(CertificateFactory.getInstance("X.509").generateCertificates(in));
    }
    if (certs.isEmpty()) {
      throw new IllegalArgumentException(property + ": no PEM certificate in " + path);
    }
    return certs;
  }

  static PrivateKey privateKey(String path, String property) throws Exception {
    String text;
    try {
      text = new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new IllegalArgumentException(property + ": cannot read " + path + ": " + e.getMessage(), e);
    }
    Matcher block = PEM.matcher(text);
    while (block.find()) {
      String kind = block.group(1);
      if (!kind.endsWith("PRIVATE KEY")) {
        continue;
      }
      byte[] der = Base64.getMimeDecoder().decode(block.group(2).trim());
      if ("PRIVATE KEY".equals(kind)) {
        return pkcs8(der, path, property);
      }
      if ("RSA PRIVATE KEY".equals(kind)) {
        return KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(rsaPkcs8(der)));
      }
      throw new IllegalArgumentException(property + ": " + path + " holds a " + kind + "; give an unencrypted "
          + "PKCS#8 key (openssl pkcs8 -topk8 -nocrypt -in " + path + ")");
    }
    throw new IllegalArgumentException(property + ": no PEM private key in " + path);
  }

  private static PrivateKey pkcs8(byte[] der, String path, String property) throws Exception {
    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
    for (String algorithm : new String[] {"RSA", "EC", "Ed25519", "Ed448", "RSASSA-PSS"}) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(spec);
      } catch (Exception e) {
        // the next algorithm
      }
    }
    throw new IllegalArgumentException(property + ": the key in " + path + " is of none of RSA, EC, Ed25519");
  }

  /** A PKCS#1 RSA key wrapped as PKCS#8: SEQUENCE { 0, SEQUENCE { rsaEncryption, NULL }, OCTET STRING key }. */
  private static byte[] rsaPkcs8(byte[] pkcs1) {
    byte[] version = {0x02, 0x01, 0x00};
    byte[] algorithm = {0x30, 0x0d, 0x06, 0x09, 0x2a, (byte) 0x86, 0x48, (byte) 0x86, (byte) 0xf7, 0x0d, 0x01, 0x01,
        0x01, 0x05, 0x00};
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.writeBytes(version);
    body.writeBytes(algorithm);
    body.writeBytes(der(0x04, pkcs1));
    return der(0x30, body.toByteArray());
  }

  private static byte[] der(int tag, byte[] content) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(tag);
    int length = content.length;
    if (length < 0x80) {
      out.write(length);
    } else {
      int bytes = (32 - Integer.numberOfLeadingZeros(length) + 7) / 8;
      out.write(0x80 | bytes);
      for (int i = bytes - 1; i >= 0; i--) {
        out.write((length >>> (8 * i)) & 0xff);
      }
    }
    out.writeBytes(content);
    return out.toByteArray();
  }
}
