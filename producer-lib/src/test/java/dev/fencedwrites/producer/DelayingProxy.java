package dev.fencedwrites.producer;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A TCP proxy on loopback that delays a new connection by {@code connectDelay} before dialling the
 * target, then delivers every chunk {@code latency} after it was read, in each direction (a slow
 * link, not a slow pipe: chunks in flight overlap). For tests of timing against a real etcd.
 */
final class DelayingProxy implements AutoCloseable {
    private record Chunk(long dueNanos, byte[] bytes) {
    }

    private final ServerSocket server;
    private final InetSocketAddress target;
    private final long connectDelayMillis;
    private final long latencyNanos;

    DelayingProxy(InetSocketAddress target, long connectDelayMillis, long latencyMillis) throws IOException {
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.target = target;
        this.connectDelayMillis = connectDelayMillis;
        this.latencyNanos = TimeUnit.MILLISECONDS.toNanos(latencyMillis);
        daemon(this::accept);
    }

    /** The proxy's address, as an etcd endpoint URL. */
    String endpoint() {
        return "http://127.0.0.1:" + server.getLocalPort();
    }

    private void accept() {
        try {
            while (true) {
                Socket client = server.accept();
                daemon(() -> connect(client));
            }
        } catch (IOException closed) {
            // the proxy was closed
        }
    }

    private void connect(Socket client) {
        try {
            Thread.sleep(connectDelayMillis);
            Socket upstream = new Socket(target.getAddress(), target.getPort());
            pipe(client, upstream);
            pipe(upstream, client);
        } catch (IOException | InterruptedException e) {
            closeQuietly(client);
        }
    }

    private void pipe(Socket from, Socket to) throws IOException {
        LinkedBlockingQueue<Chunk> line = new LinkedBlockingQueue<>();
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        daemon(() -> {
            byte[] buffer = new byte[64 * 1024];
            try {
                for (int n; (n = in.read(buffer)) >= 0;) {
                    line.add(new Chunk(System.nanoTime() + latencyNanos, Arrays.copyOf(buffer, n)));
                }
            } catch (IOException e) {
                // the connection ended
            }
            line.add(new Chunk(0, null));
        });
        daemon(() -> {
            try {
                for (Chunk chunk = line.take(); chunk.bytes() != null; chunk = line.take()) {
                    TimeUnit.NANOSECONDS.sleep(chunk.dueNanos() - System.nanoTime());
                    out.write(chunk.bytes());
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                // the connection ended
            }
            closeQuietly(from);
            closeQuietly(to);
        });
    }

    private static void daemon(Runnable task) {
        Thread thread = new Thread(task, "delaying-proxy");
        thread.setDaemon(true);
        thread.start();
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException e) {
            // nothing to do
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
