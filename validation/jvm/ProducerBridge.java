// SPDX-License-Identifier: Apache-2.0
package dcdrill;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * Kafka's own Java producer for dcdrill's workload (validation/java_client.py starts it). The
 * Python producer keeps the sequencing, the intent log and the ledger; this process only sends,
 * so every outcome the ledger keeps is the Java client's own.
 *
 * <p>stdin: the producer's properties (java.util.Properties lines, passwords included: a pipe,
 * never argv), an empty line, then one command per line, fields tab-separated:
 * {@code s seq partition topic key value [header=value ...]} send; {@code p topic} partition
 * count; {@code f} flush; with a transactional.id, {@code b} begin a transaction and {@code c
 * txn} commit it or {@code x txn} abort it; end of input closes. stdout: {@code i} the effective
 * settings (a Properties block's lines, tab-separated), {@code a seq offset} acknowledged,
 * {@code e seq class message} failed, {@code n count|-1 why} partitions, {@code f} flushed,
 * {@code t txn committed|aborted|unknown [why]} a transaction's end.
 */
public final class ProducerBridge {
    // The settings the record keeps, as the client resolved them (ProducerConfig's defaults included).
    private static final String[] REPORTED = {
        "acks", "enable.idempotence", "retries", "delivery.timeout.ms", "request.timeout.ms",
        "linger.ms", "batch.size", "max.in.flight.requests.per.connection", "max.block.ms",
        "retry.backoff.ms", "compression.type", "socket.connection.setup.timeout.ms",
        "transaction.timeout.ms",
    };

    private static OutputStream answerStream;
    private final LinkedBlockingQueue<String> answers = new LinkedBlockingQueue<>();

    public static void main(String[] args) throws Exception {
        answerStream = Bridge.answers();
        BufferedReader in = Bridge.stdin();
        Properties props = Bridge.properties(in);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        new ProducerBridge().run(props, in);
    }

    private void run(Properties props, BufferedReader in) throws IOException, InterruptedException {
        Thread writer = new Thread(this::writeAnswers, "answers");
        writer.setDaemon(true);
        writer.start();
        answers.put(effective(props));
        boolean transactional = props.containsKey(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
        KafkaProducer<byte[], byte[]> producer = open(props, transactional);
        try {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                String[] f = line.split("\t", -1);
                switch (f[0]) {
                    case "s":
                        send(producer, f);
                        break;
                    case "p":
                        answers.put(partitions(producer, f[1]));
                        break;
                    case "f":
                        producer.flush();
                        answers.put("f");
                        break;
                    case "b":
                        producer.beginTransaction();
                        break;
                    case "c":
                    case "x":
                        String outcome = end(producer, f[0].equals("c"), props);
                        if (outcome.startsWith("unknown")) {  // its state is lost: a new producer fences the old
                            producer.close(Duration.ZERO);
                            producer = open(props, true);
                        }
                        answers.put("t\t" + f[1] + "\t" + outcome);
                        break;
                    default:
                        throw new IOException("unknown command: " + f[0]);
                }
            }
        } finally {
            producer.close(Duration.ofSeconds(5));  // what is still in flight is answered first
        }
        answers.put("");  // the writer's sign to flush and stop
        writer.join(5000);
    }

    /** A producer; a transactional one is registered with its coordinator (retried until it is). */
    private static KafkaProducer<byte[], byte[]> open(Properties props, boolean transactional)
            throws InterruptedException {
        while (true) {
            KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
            if (!transactional) {
                return producer;
            }
            try {
                producer.initTransactions();
                return producer;
            } catch (TimeoutException e) {  // the coordinator is out of reach (a DC loss): again
                producer.close(Duration.ZERO);
                Thread.sleep(1000);
            }
        }
    }

    /**
     * Commit (or abort) the open transaction: {@code committed}, {@code aborted}, or {@code
     * unknown<TAB>why} when neither can be known. A commit that times out is retried, as the
     * client allows, until the transaction's own timeout has passed; a commit refused otherwise
     * is aborted instead, and an abort that fails leaves the outcome unknown.
     */
    private static String end(KafkaProducer<byte[], byte[]> producer, boolean commit, Properties props) {
        long deadline = System.currentTimeMillis()
            + Long.parseLong(props.getProperty(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000"));
        String why = "";
        if (commit) {
            while (true) {
                try {
                    producer.commitTransaction();
                    return "committed";
                } catch (TimeoutException e) {
                    why = failure(e);
                    if (System.currentTimeMillis() > deadline) {
                        return "unknown\t" + why;
                    }
                } catch (KafkaException e) {  // a record of it failed, or the producer was fenced
                    why = failure(e);
                    break;
                }
            }
        }
        try {
            if (!commit) {  // an abort on purpose: its records reach the log first, so readers must skip them
                producer.flush();
            }
            producer.abortTransaction();
            return "aborted" + (why.isEmpty() ? "" : "\t" + why);
        } catch (KafkaException e) {
            return "unknown\t" + (why.isEmpty() ? "" : why + "; then ") + failure(e);
        }
    }

    private static String failure(Exception e) {
        return e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).replace('\t', ' ').replace('\n', ' ');
    }

    private static String effective(Properties props) {
        Map<String, ?> values = new ProducerConfig(props).values();
        Map<String, String> out = new TreeMap<>();
        out.put("client.version", AppInfoParser.getVersion());
        for (String key : REPORTED) {
            if (values.containsKey(key)) {
                out.put(key, String.valueOf(values.get(key)));
            }
        }
        StringBuilder line = new StringBuilder("i");
        for (Map.Entry<String, String> e : out.entrySet()) {
            line.append('\t').append(e.getKey()).append('=').append(e.getValue());
        }
        return line.toString();
    }

    private void send(KafkaProducer<byte[], byte[]> producer, String[] f) throws InterruptedException {
        long seq = Long.parseLong(f[1]);
        List<Header> headers = new ArrayList<>();
        for (int i = 6; i < f.length; i++) {
            int eq = f[i].indexOf('=');
            headers.add(new RecordHeader(f[i].substring(0, eq), f[i].substring(eq + 1).getBytes(StandardCharsets.UTF_8)));
        }
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(
            f[3], Integer.parseInt(f[2]), f[4].getBytes(StandardCharsets.UTF_8),
            f[5].getBytes(StandardCharsets.UTF_8), headers);
        try {
            producer.send(record, (metadata, error) -> answers.add(
                error == null ? "a\t" + seq + "\t" + metadata.offset() : failed(seq, error)));
        } catch (RuntimeException error) {  // refused before it reached the client's buffer
            answers.put(failed(seq, error));
        }
    }

    private static String failed(long seq, Exception error) {
        String why = String.valueOf(error.getMessage()).replace('\t', ' ').replace('\n', ' ');
        return "e\t" + seq + "\t" + error.getClass().getName() + "\t" + why;
    }

    private static String partitions(KafkaProducer<byte[], byte[]> producer, String topic) {
        try {
            return "n\t" + producer.partitionsFor(topic).size();
        } catch (RuntimeException error) {
            return "n\t-1\t" + String.valueOf(error.getMessage()).replace('\n', ' ');
        }
    }

    /** Every answer waiting, in one write: one read of the Python side then serves them all. */
    private void writeAnswers() {
        OutputStream out = answerStream;
        List<String> batch = new ArrayList<>();
        try {
            while (true) {
                batch.add(answers.take());
                answers.drainTo(batch);
                StringBuilder text = new StringBuilder();
                boolean last = false;
                for (String a : batch) {
                    if (a.isEmpty()) {
                        last = true;
                    } else {
                        text.append(a).append('\n');
                    }
                }
                batch.clear();
                out.write(text.toString().getBytes(StandardCharsets.UTF_8));
                out.flush();
                if (last) {
                    return;
                }
            }
        } catch (IOException | InterruptedException e) {
            Runtime.getRuntime().halt(1);  // nobody reads the answers any more
        }
    }
}
