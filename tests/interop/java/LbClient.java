// JacORB client of crates/armillary-cli/tests/lb.rs: calls
// LbBench::Worker::work(1) through the group reference in IOR-FILE (by the
// Dynamic Invocation Interface, so no IDL is compiled) once per line read
// on standard input, and prints the name of the replica that answered, or
// "error <exception>". JacORB follows the locator's LOCATION_FORWARD.
//   java -cp JACORB:. LbClient IOR-FILE
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Properties;

import org.omg.CORBA.ARG_IN;
import org.omg.CORBA.ORB;
import org.omg.CORBA.Request;
import org.omg.CORBA.TCKind;

public class LbClient {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.setProperty("org.omg.CORBA.ORBClass", "org.jacorb.orb.ORB");
        props.setProperty("org.omg.CORBA.ORBSingletonClass", "org.jacorb.orb.ORBSingleton");
        props.setProperty("jacorb.log.default.verbosity", "0");
        ORB orb = ORB.init(new String[0], props);
        String ior = new String(Files.readAllBytes(Paths.get(args[0]))).trim();
        org.omg.CORBA.Object group = orb.string_to_object(ior);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            try {
                Request r = group._request("work");
                r.add_in_arg().insert_long(1);
                r.set_return_type(orb.get_primitive_tc(TCKind.tk_string));
                r.invoke();
                Exception e = r.env().exception();
                if (e != null) {
                    System.out.println("error " + e);
                } else {
                    System.out.println(r.return_value().extract_string());
                }
            } catch (Exception e) {
                System.out.println("error " + e);
            }
            System.out.flush();
        }
        orb.shutdown(false);
    }
}
