package io.reactivelock.support;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * What the tests read from a compiled class without loading it: the text constants of its constant
 * pool (every class, method, field and module name it refers to, its descriptors and signatures, its
 * string literals) and the names of the methods it declares. A class loaded before BlockHound
 * installs is retransformed and loses its parameter names, and a loaded class cannot show what it
 * merely names; so the harness reads the bytes (JVMS chapter 4), with no library of its own.
 */
public record ClassFile(List<String> texts, Set<String> methods) {

    private static final int MAGIC = 0xCAFEBABE;

    /** Parses the bytes of a {@code .class} file. */
    public static ClassFile read(byte[] bytes) throws IOException {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
        if (in.readInt() != MAGIC) {
            throw new IOException("not a class file");
        }
        in.readUnsignedShort(); // minor version
        in.readUnsignedShort(); // major version
        int count = in.readUnsignedShort();
        String[] utf8 = new String[count];
        for (int i = 1; i < count; i++) {
            int tag = in.readUnsignedByte();
            switch (tag) {
                case 1 -> utf8[i] = in.readUTF();
                case 7, 8, 16, 19, 20 -> in.skipNBytes(2); // Class, String, MethodType, Module, Package
                case 15 -> in.skipNBytes(3); // MethodHandle
                case 3, 4, 9, 10, 11, 12, 17, 18 -> in.skipNBytes(4); // Integer, Float, refs, NameAndType, (Invoke)Dynamic
                case 5, 6 -> { // Long and Double take two entries
                    in.skipNBytes(8);
                    i++;
                }
                default -> throw new IOException("unknown constant pool tag " + tag + " at entry " + i);
            }
        }
        in.skipNBytes(6); // access flags, this class, super class
        in.skipNBytes(2L * in.readUnsignedShort()); // interfaces
        skipMembers(in); // fields
        Set<String> methods = new LinkedHashSet<>();
        int methodCount = in.readUnsignedShort();
        for (int m = 0; m < methodCount; m++) {
            in.skipNBytes(2); // access flags
            methods.add(utf8[in.readUnsignedShort()]);
            in.skipNBytes(2); // descriptor
            skipAttributes(in);
        }
        List<String> texts = new ArrayList<>();
        for (String text : utf8) {
            if (text != null) {
                texts.add(text);
            }
        }
        return new ClassFile(List.copyOf(texts), Set.copyOf(methods));
    }

    private static void skipMembers(DataInputStream in) throws IOException {
        int count = in.readUnsignedShort();
        for (int i = 0; i < count; i++) {
            in.skipNBytes(6); // access flags, name, descriptor
            skipAttributes(in);
        }
    }

    private static void skipAttributes(DataInputStream in) throws IOException {
        int count = in.readUnsignedShort();
        for (int i = 0; i < count; i++) {
            in.skipNBytes(2); // name
            in.skipNBytes(Integer.toUnsignedLong(in.readInt()));
        }
    }
}
