/*
 * ty_xml.h - a tiny reader for the flat XML documents of S3 (request bodies such as
 * CompleteMultipartUpload and Delete, and the answers of an external S3 store).
 *
 * Owns: nothing beyond the strings it returns. It finds elements by name (no namespaces, no
 * nesting of an element inside one of the same name) and decodes text with the five named
 * entities and numeric references. Not a validating parser: callers check what they need.
 */
#ifndef TY_CORE_TY_XML_H
#define TY_CORE_TY_XML_H

/* Finds the first <tag>...</tag> (or <tag/>, or <tag attr...>) in [p, end). OUT: *in, *in_end
   the element's inner text range. Returns the position after the element, or NULL. */
const char *ty_xml_find(const char *p, const char *end, const char *tag, const char **in,
                        const char **in_end);

/* new (free()): the unescaped text of [p, end), or NULL when it holds a bad entity or a NUL. */
char *ty_xml_text(const char *p, const char *end);

#endif
