// The RMI-IIOP stub delegate of the JacORB peers: JacORB touches
// javax.rmi.CORBA.Stub when it makes an object reference, and on Java 11
// and later (no CORBA in the JDK) that class, from glassfish-corba-omgapi,
// wants a delegate class to exist. The peers use no RMI-IIOP stubs, so
// this one is never called.
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;

import javax.rmi.CORBA.Stub;
import javax.rmi.CORBA.StubDelegate;

public class NoStubDelegate implements StubDelegate {
    public int hashCode(Stub self) { return System.identityHashCode(self); }
    public boolean equals(Stub self, Object obj) { return self == obj; }
    public String toString(Stub self) { return "Stub"; }
    public void connect(Stub self, org.omg.CORBA.ORB orb) { throw new UnsupportedOperationException(); }
    public void readObject(Stub self, ObjectInputStream s) { throw new UnsupportedOperationException(); }
    public void writeObject(Stub self, ObjectOutputStream s) { throw new UnsupportedOperationException(); }
}
