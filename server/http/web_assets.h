// The dashboard's files (web/: the page, its script and styles, and uPlot from npm), embedded in
// traind by the build (cmake/embed_files.cmake), so nothing is fetched at run time and nothing
// has to be installed beside the binary.
#ifndef TRAIND_SERVER_HTTP_WEB_ASSETS_H_
#define TRAIND_SERVER_HTTP_WEB_ASSETS_H_

#include <cstddef>
#include <string>

namespace traind {

struct WebAsset {
  const char* path;          // the URL path, e.g. "/app.js"
  const char* content_type;  // e.g. "text/javascript; charset=utf-8"
  const unsigned char* data;
  size_t size;
};

// The asset served at `path`, or null.
const WebAsset* FindWebAsset(const std::string& path);

}  // namespace traind

#endif  // TRAIND_SERVER_HTTP_WEB_ASSETS_H_
