/* .pt2 archives (torch.export.save). The archive reader is not part of
 * this build yet, so a .pt2 is refused by name rather than misread. */
#include "core/status.h"
#include "model/model.h"

porta_status *model_load_pt2(const char *path, porta_model **out) {
    (void)out;
    return porta_error(PORTA_ERR_UNSUPPORTED,
                       "%s: a ZIP archive (.pt2); this build has no .pt2 reader yet, export the "
                       "model with torch_porta.export to a .porta file",
                       path);
}
